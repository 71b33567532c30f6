//! Who may read a stored object: its owner, group and mode ([`Access`]),
//! and the *meet* of several ([`Meet`]) for a file that shows many objects
//! at once (`data.bin`, a `.nc`, a reference set's key that reads a target
//! file through directories of its own).
//!
//! The meet keeps the owner and group it was made for and clears the read
//! bit of each class of users (owner, group, others) unless every user of
//! that class passes every source. A user of a class may fall into several
//! classes of a source (a member of the file's group may or may not own the
//! source, or be in its group), and the bit stays only if each of them
//! grants what the source needs. When every source has the file's owner and
//! group, this is the bitwise AND of their modes. Group membership is never
//! looked up, so the answer is conservative: it may deny a user whom a
//! direct read would let in, never the reverse.

/// Who may read a stored object or prefix: its owner, group and mode bits,
/// as the store's own filesystem has them. Object stores have none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Access {
    /// The owner.
    pub uid: u32,
    /// The group.
    pub gid: u32,
    /// Permission bits (`0o7777` at most).
    pub mode: u32,
}

impl Access {
    /// What a directory inside one file (a zip, a reference set) shows:
    /// the file's access, with the search bit beside each read bit, so
    /// that whoever may read the file may walk its directories.
    pub fn searchable(self) -> Access {
        Access {
            mode: self.mode | (self.mode & 0o444) >> 2,
            ..self
        }
    }
}

/// What a reader of the combined file needs of one source.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Need {
    /// Read an object (`r`).
    Read,
    /// Pass through a directory (`x`).
    Search,
}

/// The classes of users a mode distinguishes, as bit shifts.
const OWNER: u32 = 6;
const GROUP: u32 = 3;
const OTHER: u32 = 0;

/// The meet of the sources seen so far, for a file shown as `uid:gid`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Meet {
    uid: u32,
    gid: u32,
    /// Read bits still granted (a subset of `0o444`).
    mode: u32,
}

impl Meet {
    /// A file shown as owned by `uid:gid`, readable by all until a source
    /// says otherwise.
    pub fn new(uid: u32, gid: u32) -> Meet {
        Meet { uid, gid, mode: 0o444 }
    }

    /// Narrow the meet by one source that readers need `need` of.
    pub fn require(&mut self, source: &Access, need: Need) {
        let bit = match need {
            Need::Read => 4,
            Need::Search => 1,
        };
        let grants = |class: u32| source.mode >> class & bit != 0;
        let owns = source.uid == self.uid;
        let same_group = source.gid == self.gid;
        for class in [OWNER, GROUP, OTHER] {
            // The classes of `source` a user of `class` (of the combined
            // file) may fall into.
            let maybe_owner = match class {
                OWNER => owns,
                _ => !owns,
            };
            let maybe_group = match class {
                OWNER => !owns,
                GROUP => true,
                _ => !same_group,
            };
            let maybe_other = match class {
                OWNER => !owns,
                GROUP => !same_group,
                _ => true,
            };
            let ok =
                (!maybe_owner || grants(OWNER)) && (!maybe_group || grants(GROUP)) && (!maybe_other || grants(OTHER));
            if !ok {
                self.mode &= !(4 << class);
            }
        }
    }

    /// Whether no user but root may read the file any more (a walk of the
    /// sources may stop).
    pub fn is_closed(&self) -> bool {
        self.mode == 0
    }

    /// The meet, as one owner, group and mode.
    pub fn access(&self) -> Access {
        Access {
            uid: self.uid,
            gid: self.gid,
            mode: self.mode,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn a(uid: u32, gid: u32, mode: u32) -> Access {
        Access { uid, gid, mode }
    }

    fn meet(sources: &[(Access, Need)]) -> u32 {
        let mut m = Meet::new(10, 20);
        for (s, n) in sources {
            m.require(s, *n);
        }
        m.access().mode
    }

    #[test]
    fn sources_of_the_same_owner_and_group_meet_as_a_bitwise_and() {
        for (x, y) in [(0o644, 0o600), (0o640, 0o604), (0o444, 0o440), (0o755, 0o700)] {
            assert_eq!(
                meet(&[(a(10, 20, x), Need::Read), (a(10, 20, y), Need::Read)]),
                x & y & 0o444,
                "{x:o} {y:o}"
            );
        }
        // A directory's search bit stands for its read bit.
        assert_eq!(meet(&[(a(10, 20, 0o751), Need::Search)]), 0o444);
        assert_eq!(meet(&[(a(10, 20, 0o750), Need::Search)]), 0o440);
        assert_eq!(meet(&[(a(10, 20, 0o700), Need::Search)]), 0o400);
    }

    #[test]
    fn a_source_of_another_owner_counts_its_owner_bits_against_everyone_else() {
        // 0600 owned by uid 0: the file's owner (10) is "other" to it.
        assert_eq!(meet(&[(a(0, 20, 0o600), Need::Read)]), 0);
        // 0644 owned by someone else: everyone may read it.
        assert_eq!(meet(&[(a(0, 99, 0o644), Need::Read)]), 0o444);
        // 0640 in another group: only users in that group; membership is not
        // looked up, so no class of the file passes.
        assert_eq!(meet(&[(a(10, 99, 0o640), Need::Read)]), 0o400);
        // 0604, a perverse mode: its group may not read, others may; the
        // file's others may be in its group, so they are refused too.
        assert_eq!(meet(&[(a(10, 99, 0o604), Need::Read)]), 0o400);
        // 0044: its owner (the file's owner) may not read.
        assert_eq!(meet(&[(a(10, 20, 0o044), Need::Read)]), 0o044);
        // ... and owned by another: the file's owner may read it, but the
        // file's group and others may include the one user it refuses.
        assert_eq!(meet(&[(a(11, 20, 0o044), Need::Read)]), 0o400);
    }

    /// Brute force: for every user of a small world, what the meet grants
    /// is no more than what every source grants.
    #[test]
    fn the_meet_never_grants_a_user_what_a_source_denies() {
        // Users 0..4 (none root), groups 0..3; user u is in groups
        // `memberships[u]`.
        let memberships: [&[u32]; 4] = [&[0], &[0, 1], &[1, 2], &[]];
        let may = |acc: &Access, user: u32, bit: u32| {
            let class = if acc.uid == user {
                OWNER
            } else if memberships[user as usize].contains(&acc.gid) {
                GROUP
            } else {
                OTHER
            };
            acc.mode >> class & bit != 0
        };
        let modes = [
            0o000, 0o004, 0o040, 0o044, 0o400, 0o404, 0o440, 0o444, 0o111, 0o751, 0o705,
        ];
        for uid in 0..4 {
            for gid in 0..3 {
                for su in 0..4 {
                    for sg in 0..3 {
                        for &mode in &modes {
                            for need in [Need::Read, Need::Search] {
                                let src = a(su, sg, mode);
                                let mut m = Meet::new(uid, gid);
                                m.require(&src, need);
                                let bit = if need == Need::Read { 4 } else { 1 };
                                for user in 0..4 {
                                    if may(&m.access(), user, 4) {
                                        assert!(may(&src, user, bit), "{user} via {:?} of {src:?}", m.access());
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}
