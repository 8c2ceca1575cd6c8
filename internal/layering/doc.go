// Package layering holds no code: its test asserts the import layering of
// the module (which whyslow package may import which, and which heavy
// dependencies a program that uses only part of the library links). It
// must not be imported.
package layering
