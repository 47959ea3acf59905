//go:build race

package main

// The binary under test is built with the race detector when the tests are.
func init() { buildFlags = append(buildFlags, "-race") }
