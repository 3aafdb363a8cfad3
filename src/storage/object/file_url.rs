//! `file://` places on disk as `gc` and an abort clear them: what is left
//! below a folder, and removals that never follow a symbolic link on the way
//! (docs/format.md "Storage backends and the commit").

use std::io;

/// `file://`: the first entry (in name order, depth first) below the
/// directory `dir` that is not a directory, other than `markers` at its top:
/// a file, a symbolic link, a name that is not UTF-8 (lossily named). Links
/// are not followed. A directory below `dir` that cannot be read (this user
/// may not, review 123) is such an entry, as what it holds is not known; `dir`
/// itself gone is none.
pub(in crate::storage) fn file_left_besides(dir: &std::path::Path, markers: &[&str]) -> Option<String> {
    file_left_in(dir, markers).unwrap_or(None)
}

/// [`file_left_besides`]; `Err(())` when `dir` exists but cannot be read.
fn file_left_in(dir: &std::path::Path, markers: &[&str]) -> std::result::Result<Option<String>, ()> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(_) => return Err(()),
    };
    let mut entries: Vec<_> = entries.flatten().map(|e| (e.file_name(), e.file_type().ok())).collect();
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(entries.into_iter().find_map(|(name, kind)| {
        let shown = name.to_string_lossy().into_owned();
        match kind {
            Some(t) if t.is_dir() => match file_left_in(&dir.join(&name), &[]) {
                Ok(left) => left.map(|rel| format!("{shown}/{rel}")),
                Err(()) => Some(shown),
            },
            _ if markers.iter().any(|m| name == *m) => None,
            _ => Some(shown),
        }
    }))
}

/// `file://`: removes the file `rel` (`/`-separated) below the directory
/// `dir` without following a symbolic link on the way: each directory is
/// opened relative to the one before with `O_NOFOLLOW`, and the file is
/// unlinked relative to the last, so a directory swapped for a link after
/// gc listed it (a link out of the root, or into a committed version) fails
/// the removal instead of leading it there. `false` when it is gone.
///
/// # Errors
/// The I/O error, `ELOOP`/`ENOTDIR` for a link on the way.
pub(in crate::storage) fn remove_file_nofollow(dir: &std::path::Path, rel: &str) -> std::io::Result<bool> {
    unlink_nofollow(dir, rel, rustix::fs::AtFlags::empty())
}

/// `file://`: removes the directory `rel` below `dir` when it is empty
/// (`rmdir(2)`: one that holds anything, put there meanwhile included,
/// stays), reached as [`remove_file_nofollow`] reaches a file. `false` when it
/// is gone.
///
/// # Errors
/// The I/O error (`ENOTEMPTY` for one that is not empty).
pub(in crate::storage) fn remove_empty_dir_nofollow(dir: &std::path::Path, rel: &str) -> std::io::Result<bool> {
    unlink_nofollow(dir, rel, rustix::fs::AtFlags::REMOVEDIR)
}

/// `file://`: removes the folders of the prefix `rel` below `dir` once its
/// files are gone (a parts' prefix is one write's alone: its name holds the
/// write id): every empty directory below it, deepest first, then `rel`
/// itself. They are found through handles (entries examined with
/// `AT_SYMLINK_NOFOLLOW`, names that are not UTF-8 passed over: gc reports
/// such a name as kept) and each is removed by its name from `dir`, reached as
/// [`remove_file_nofollow`] reaches a file: a folder moved out of the place
/// meanwhile is not reached (review 125: a handle follows it, and one emptied
/// folders outside the place). What is not empty, or cannot be reached,
/// stays. Returns whether `rel` is gone.
pub(in crate::storage) fn remove_prefix_folders(dir: &std::path::Path, rel: &str) -> bool {
    use rustix::fs::{statat, AtFlags, Dir, FileType};
    let mut found = Vec::new();
    let mut todo = vec![rel.to_string()];
    while let Some(at) = todo.pop() {
        let Ok(fd) = open_dir_nofollow(dir, &at) else { continue };
        let Ok(entries) = Dir::read_from(&fd) else { continue };
        for entry in entries.flatten() {
            let Ok(name) = entry.file_name().to_str() else { continue };
            if name == "." || name == ".." {
                continue;
            }
            let is_dir = statat(&fd, entry.file_name(), AtFlags::SYMLINK_NOFOLLOW)
                .is_ok_and(|st| FileType::from_raw_mode(st.st_mode) == FileType::Directory);
            if is_dir {
                let sub = format!("{at}/{name}");
                found.push(sub.clone());
                todo.push(sub);
            }
        }
    }
    found.sort_by(|a, b| b.matches('/').count().cmp(&a.matches('/').count()).then_with(|| a.cmp(b)));
    crate::storage::pause_point("parts-folders-listed");
    for sub in found {
        let _ = remove_empty_dir_nofollow(dir, &sub);
    }
    let _ = remove_empty_dir_nofollow(dir, rel);
    std::fs::symlink_metadata(dir.join(rel)).is_err()
}

/// The directory `rel` (`/`-separated) below `dir`, each directory on the
/// way opened relative to the one before with `O_NOFOLLOW`.
fn open_dir_nofollow(dir: &std::path::Path, rel: &str) -> std::result::Result<rustix::fd::OwnedFd, rustix::io::Errno> {
    use rustix::fs::{openat, Mode, OFlags, CWD};
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
    let mut at = openat(CWD, dir, flags, Mode::empty())?;
    for part in rel.split('/').filter(|p| !p.is_empty()) {
        at = openat(&at, part, flags | OFlags::NOFOLLOW, Mode::empty())?;
    }
    Ok(at)
}

/// `unlinkat(2)` of `rel` below `dir` with `flags`, every directory on the way
/// opened with `O_NOFOLLOW` (see [`remove_file_nofollow`]).
fn unlink_nofollow(dir: &std::path::Path, rel: &str, flags_at: rustix::fs::AtFlags) -> std::io::Result<bool> {
    let gone = |e: rustix::io::Errno| match e {
        rustix::io::Errno::NOENT => Ok(false),
        e => Err(std::io::Error::from(e)),
    };
    let (parent, name) = rel.trim_end_matches('/').rsplit_once('/').unwrap_or(("", rel));
    if name.is_empty() {
        return Ok(false);
    }
    let at = match open_dir_nofollow(dir, parent) {
        Ok(fd) => fd,
        Err(e) => return gone(e),
    };
    match rustix::fs::unlinkat(&at, name, flags_at) {
        Ok(()) => Ok(true),
        Err(e) => gone(e),
    }
}
