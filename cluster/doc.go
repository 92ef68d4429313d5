// Package cluster holds the tests of a cluster of sync servers over one
// etcd cluster, run as real processes on 127.0.0.1: Debian's etcd-server
// (three members) and three hilodb-server binaries with node tags A, B and
// C. `make test-cluster` installs etcd-server and runs them.
package cluster
