// Package dumpdir is how package snapshot meets the files of a dump
// directory: what a dump's name says (ParseName, IsDumpName), a walk that
// lists the dumps and TSDBs below a directory without following links out
// of it or opening anything but directories (Walk), and an open that reads
// a file only if it is still the regular file listed (Open). Nothing is
// written, renamed or locked.
//
// It imports no whyslow package.
package dumpdir
