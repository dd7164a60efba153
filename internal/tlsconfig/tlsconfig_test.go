package tlsconfig

import "testing"

func TestPlaintextOnlyOnLoopback(t *testing.T) {
	for _, tc := range []struct {
		addr string
		ok   bool
	}{
		{"127.0.0.1:8080", true},
		{"localhost:1", true},
		{"[::1]:443", true},
		{"10.0.0.4:8080", false},
		{"0.0.0.0:8080", false},
		{":8080", false},
		{"example.com:443", false},
	} {
		t.Run(tc.addr, func(t *testing.T) {
			_, errC := Files{}.Client(tc.addr)
			_, errS := Files{}.Server(tc.addr)
			if (errC == nil) != tc.ok || (errS == nil) != tc.ok {
				t.Fatalf("client err %v, server err %v; want ok=%v", errC, errS, tc.ok)
			}
		})
	}
}

func TestServerNeedsCertAndKey(t *testing.T) {
	if _, err := (Files{CA: "ca.pem"}).Server("127.0.0.1:1"); err == nil {
		t.Fatal("server TLS with only a CA was accepted")
	}
}
