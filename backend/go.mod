module github.com/openhcp/openhcp/backend

go 1.26

require (
	github.com/prometheus/client_golang v1.23.2
	google.golang.org/grpc v1.82.1
)

require (
	github.com/openhcp/openhcp/cluster-service v0.0.0
	github.com/openhcp/openhcp/internal v0.0.0
)

require (
	github.com/beorn7/perks v1.0.1 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/kr/text v0.2.0 // indirect
	github.com/munnerz/goautoneg v0.0.0-20191010083416-a7dc8b61c822 // indirect
	github.com/prometheus/client_model v0.6.2 // indirect
	github.com/prometheus/common v0.66.1 // indirect
	github.com/prometheus/procfs v0.16.1 // indirect
	go.yaml.in/yaml/v2 v2.4.2 // indirect
	golang.org/x/net v0.53.0 // indirect
	golang.org/x/sys v0.43.0 // indirect
	golang.org/x/text v0.41.0 // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20260414002931-afd174a4e478 // indirect
	google.golang.org/protobuf v1.36.11 // indirect
)

// The workspace resolves these; the replaces let `go mod tidy` run on this module alone.
replace (
	github.com/openhcp/openhcp/cluster-service => ../cluster-service
	github.com/openhcp/openhcp/internal => ../internal
)
