module github.com/openhcp/openhcp/dev-infrastructure/node

go 1.26

require (
	github.com/openhcp/openhcp/dev-infrastructure/images v0.0.0
	github.com/openhcp/openhcp/internal v0.0.0
)

require (
	github.com/containerd/stargz-snapshotter/estargz v0.14.3 // indirect
	github.com/go-logr/logr v1.4.3 // indirect
	github.com/google/go-containerregistry v0.20.2 // indirect
	github.com/klauspost/compress v1.16.5 // indirect
	github.com/opencontainers/go-digest v1.0.0 // indirect
	github.com/opencontainers/image-spec v1.1.0-rc3 // indirect
	github.com/vbatts/tar-split v0.11.3 // indirect
	golang.org/x/sync v0.22.0 // indirect
	k8s.io/apimachinery v0.35.3 // indirect
	k8s.io/klog/v2 v2.130.1 // indirect
	k8s.io/utils v0.0.0-20251002143259-bc988d571ff4 // indirect
)

replace github.com/openhcp/openhcp/internal => ../../internal

replace github.com/openhcp/openhcp/dev-infrastructure/images => ../images
