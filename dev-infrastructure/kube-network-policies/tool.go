//go:build tools

// Package tools pins the agent's main package in this module's requirements.
package tools

import _ "sigs.k8s.io/kube-network-policies/cmd"
