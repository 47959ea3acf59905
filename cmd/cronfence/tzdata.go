package main

// The zone database is built into the binary, so a job's time_zone works
// where the host has no /usr/share/zoneinfo: a FROM scratch image, a
// minimal container, a stripped host. Go uses the host's database first
// when there is one.
import _ "time/tzdata"
