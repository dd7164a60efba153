package node

import (
	"fmt"

	"github.com/openhcp/openhcp/dev-infrastructure/images"
)

// The node's checks run the probe image (internal/probe) as a server behind a Service and as
// clients that GET it; these build their manifests, so every check's pods look alike.

// probeServer is a Deployment name in ns of replicas probe pods (label app=name) that answer
// text on their port http (8080), ready once they listen, behind a Service name on port 80.
func probeServer(img images.Image, ns, name string, replicas int, text string) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata: {name: %[2]s, namespace: %[3]s}
spec:
  replicas: %[4]d
  selector: {matchLabels: {app: %[2]s}}
  template:
    metadata: {labels: {app: %[2]s}}
    spec:
      securityContext: {runAsNonRoot: true}
      containers:
      - name: %[2]s
        image: %[1]s
        imagePullPolicy: Never
        args: [serve, ":8080", %[5]q]
        ports: [{name: http, containerPort: 8080}]
        readinessProbe: {tcpSocket: {port: 8080}, periodSeconds: 1}
---
apiVersion: v1
kind: Service
metadata: {name: %[2]s, namespace: %[3]s}
spec:
  selector: {app: %[2]s}
  ports: [{port: 80, targetPort: http}]
`, img.DigestRef(), name, ns, replicas, text)
}

// probeClient is a probe pod name in ns that GETs url until it answers or timeout (a Go
// duration) passes; then it fails.
func probeClient(img images.Image, ns, name, url, timeout string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: %[2]s, namespace: %[3]s}
spec:
  restartPolicy: Never
  securityContext: {runAsNonRoot: true}
  containers:
  - name: get
    image: %[1]s
    imagePullPolicy: Never
    args: [get, %[4]q, %[5]s]
`, img.DigestRef(), name, ns, url, timeout)
}

// manifests joins YAML documents into one.
func manifests(docs ...string) []byte {
	var b []byte
	for i, d := range docs {
		if i > 0 {
			b = append(b, "---\n"...)
		}
		b = append(b, d...)
	}
	return b
}
