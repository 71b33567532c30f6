//! The daemon's signals: one thread takes them all (they are blocked in
//! every other thread). SIGINT, SIGTERM, SIGHUP and SIGQUIT unmount
//! cleanly; SIGUSR1, SIGUSR2 and SIGALRM, whose default action would end
//! the daemon and leave a dead mount, are logged and ignored.

/// Signals whose default action would end the daemon and leave a dead
/// mount, and that mean nothing to it: taken by the signal thread, logged
/// and ignored.
const IGNORED_SIGNALS: [i32; 3] = [libc::SIGUSR1, libc::SIGUSR2, libc::SIGALRM];

/// The signals the signal thread takes: the termination signals (SIGINT,
/// SIGTERM, SIGHUP, SIGQUIT: unmount cleanly) and [`IGNORED_SIGNALS`].
fn termination_set() -> libc::sigset_t {
    // SAFETY: sigemptyset/sigaddset initialise and fill a local set.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGINT);
        libc::sigaddset(&mut set, libc::SIGTERM);
        libc::sigaddset(&mut set, libc::SIGHUP);
        libc::sigaddset(&mut set, libc::SIGQUIT);
        for sig in IGNORED_SIGNALS {
            libc::sigaddset(&mut set, sig);
        }
        set
    }
}

/// Block the termination signals in this thread and every thread it starts
/// afterwards, so that only the signal thread receives them.
pub(super) fn block_termination_signals() {
    let set = termination_set();
    // SAFETY: a valid set; the old mask is not needed.
    unsafe {
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
    }
}

pub(super) fn wait_for_termination_signal() -> i32 {
    let set = termination_set();
    loop {
        let mut sig = 0;
        // SAFETY: the set is valid and blocked in this thread.
        unsafe {
            libc::sigwait(&set, &mut sig);
        }
        if !IGNORED_SIGNALS.contains(&sig) {
            return sig;
        }
        tracing::info!(signal = sig, "ignoring a signal that asks nothing of a mount");
    }
}
