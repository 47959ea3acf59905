// Package command runs one job command as a process group of its own and
// makes sure nothing of it outlives the run.
//
// Run starts the command (an argv list, or a string for /bin/sh -c) with
// Setpgid, so the command and every child it forks share one process group
// whose id is the command's pid. The group, not the single process, is what
// gets signalled:
//
//	running ──ctx ends──▶ SIGTERM to the group ──KillGrace──▶ SIGKILL to the group
//	   │                          │            (or KillNow closed)     │
//	   └──────── the command (group leader) exits ◀────────────────────┘
//	                              │
//	                SIGKILL to the group (stragglers: "sleep 100 &")
//	                              │
//	                 leader reaped, output drained, Result
//
// The group is killed once more after the leader exits and before it is
// reaped (on Linux, waitid with WNOWAIT keeps the leader a zombie, so its
// pid, which is the group id, cannot be reused in between): a background
// child left behind by a shell never survives the run.
//
// # The supervisor (Spec.Supervisor, Linux)
//
// A group does not hold everything: a child that calls setsid (or
// setpgid) leaves it, and a process killed with SIGKILL cannot signal its
// group on the way out; the kernel's parent-death signal (Pdeathsig) only
// reaches a direct child. With Spec.Supervisor set, Run starts a small
// supervisor process instead of the command: the same binary re-executed
// (SelfSupervisor: /proc/self/exe SuperviseArg, dispatched to Supervise
// first thing in main). The tree is
//
//	cronfence ──▶ supervisor ──▶ command ──▶ its children, setsid or not
//	              (subreaper,     (own group,
//	               own group)      Pdeathsig SIGKILL)
//
// The supervisor sets PR_SET_CHILD_SUBREAPER, so any descendant whose
// parent dies, a double-forked daemon included, is reparented to it rather
// than to init; it reaps those orphans as they exit. It runs the same
// ladder over the whole tree: on SIGTERM from Run (ctx ended), SIGTERM to
// the group and to every descendant (found by walking /proc from its own
// pid), SIGKILL to all after KillGrace; on SIGUSR1 (KillNow) SIGKILL at
// once; when the command exits, SIGKILL to whatever is left. It exits when
// it has no child left, which for a subreaper means no descendant left,
// and reports the command's pid and exit status on a pipe (its fd 3). So
// when Run returns, every process of the run is gone.
//
// If the cronfence process dies by any means, kill -9 included, the
// supervisor gets SIGUSR1 as its own parent-death signal (Run keeps the
// forking goroutine on its OS thread until the supervisor is reaped,
// because Pdeathsig follows the thread, not the process) and kills the
// whole tree; it also polls its parent pid in case the signal is missed.
//
// What is not covered:
//
//   - SIGKILL of the supervisor itself (by hand, by the OOM killer): the
//     command dies with it (its Pdeathsig) and Run kills its group, but a
//     descendant that left the group survives, reparented to init.
//   - A descendant that escapes faster than the supervisor kills: one that
//     keeps forking while the tree is walked is caught on a later pass
//     (the supervisor repeats until it has no child), but a process that
//     a descendant hands to another service (systemd-run, at, a container
//     runtime) is outside the tree altogether.
//   - Processes in uninterruptible sleep (state D) die only when the
//     kernel lets them; the supervisor, and so Run, waits for them.
//   - Other systems: Spec.Supervisor is refused; without it, only the
//     group is covered, and on systems without Pdeathsig a killed
//     cronfence leaves its command running.
//
// Only cgroups (a systemd unit with KillMode=control-group, a container)
// confine a tree that does not want to be found; the supervisor covers
// every ordinary job, including shells that daemonise with setsid.
//
// Without a supervisor, on Linux the command alone (the group leader) gets
// SIGKILL from the kernel when the process running Run dies; its children
// are not covered then.
//
// The cancellation is the caller's context only: lease loss, a timeout or
// a shutdown all arrive as ctx ending. The combined stdout and stderr are
// kept as a bounded tail (Spec.MaxOutput bytes), returned as lines.
package command
