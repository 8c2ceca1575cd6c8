// Package tsdb reads Prometheus TSDB data and snapshot directories into
// snapshot's Evidence, read-only (Read). Importing it registers the reader
// with snapshot.RegisterSource, so snapshot.Read reads TSDB directories:
//
//	import _ "github.com/whyslow/whyslow/snapshot/tsdb"
//
// It is a package of its own because github.com/prometheus/prometheus/tsdb
// and its dependencies are large: a program that reads only text dumps
// does not link them. It imports only snapshot of whyslow (and histogram
// through it); it knows nothing of vLLM.
package tsdb
