// Package command runs one job command as a process group of its own and
// makes sure nothing of it outlives the run.
//
// Run starts the command (an argv list, or a string for /bin/sh -c) with
// Setpgid, so the command and every child it forks share one process group
// whose id is the command's pid. The group, not the single process, is what
// gets signalled:
//
//	running ──ctx ends──▶ SIGTERM to the group ──KillGrace──▶ SIGKILL to the group
//	   │                          │                                   │
//	   └──────── the command (group leader) exits ◀───────────────────┘
//	                              │
//	                SIGKILL to the group (stragglers: "sleep 100 &")
//	                              │
//	                 leader reaped, output drained, Result
//
// The group is killed once more after the leader exits and before it is
// reaped (on Linux, waitid with WNOWAIT keeps the leader a zombie, so its
// pid, which is the group id, cannot be reused in between): a background
// child left behind by a shell never survives the run. A child that leaves
// the group on purpose (setsid) is out of reach, as it is for any
// supervisor that does not use cgroups.
//
// On Linux the leader also gets SIGKILL from the kernel when the process
// running it dies (Pdeathsig), so killing a supervisor with -9 does not leave
// its command running unsupervised; a shell's background children are not
// covered by that, only by the paths above.
//
// The cancellation is the caller's context only: lease loss, a timeout or
// a shutdown all arrive as ctx ending. The combined stdout and stderr are
// kept as a bounded tail (Spec.MaxOutput bytes), returned as lines.
package command
