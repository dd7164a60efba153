// Command etcd is etcd v3.5 built from the Go module proxy, so the local region needs no
// downloaded release binary.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
