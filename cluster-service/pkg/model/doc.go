// Package model owns Cluster Service's resource model: the defaults, validation rules and
// channel groups of clusters, node pools and external auths, written once. The gRPC server
// applies them to requests and the manifest builder takes their result as it is.
package model
