//! `verify`'s manifest and file checks: the manifest's bytes, seal and
//! fields; every listed file present with its size and sha256, nothing unlisted.

#[allow(clippy::wildcard_imports)]
use super::*;

impl Verifier<'_> {
    pub(super) fn manifest_finding(&mut self, location: impl Into<String>, check: Check, message: impl Into<String>) {
        self.report.push(MANIFEST, location, check, message);
    }

    /// The bytes against the canonical serialization of what they parse to
    /// (catching unknown keys, whitespace, key order, number and escape forms)
    /// and the seal against those bytes (catching any changed value, hand-written
    /// fields included): `docs/format.md` §6, "Integrity".
    pub(super) fn manifest_bytes(&mut self, bytes: &[u8]) {
        let canonical = self.m.to_bytes();
        if canonical != bytes {
            let at = canonical.iter().zip(bytes).position(|(a, b)| a != b).unwrap_or(canonical.len().min(bytes.len()));
            // the canonical text names the field as it should be (a misspelled
            // key by its right name); whitespace belongs to the key it precedes
            let key_at = canonical[at.min(canonical.len())..]
                .iter()
                .position(|b| !b.is_ascii_whitespace())
                .map_or(at, |p| at + p);
            let field = manifest::field_at(&canonical, key_at);
            let line_of = |text: &[u8]| {
                let n = text[..at.min(text.len())].iter().filter(|&&b| b == b'\n').count();
                let line = text.split(|&b| b == b'\n').nth(n).unwrap_or_default();
                (n + 1, String::from_utf8_lossy(line).trim().chars().take(80).collect::<String>())
            };
            let ((line, found), (_, expected)) = (line_of(bytes), line_of(&canonical));
            let msg = format!(
                "byte {at} (line {line}) is not the canonical form of the manifest: {found:?}, canonically {expected:?}"
            );
            let location = if field.is_empty() { "document".to_string() } else { field };
            self.manifest_finding(location, Check::Manifest, msg);
        }
        match &self.m.manifest_sha256 {
            Some(recorded) => {
                let sealed = self.m.seal_sha256();
                if *recorded != sealed {
                    let msg = format!(
                        "{recorded}, but the manifest without it hashes to {sealed}: a field changed after the commit"
                    );
                    self.manifest_finding("manifest_sha256", Check::Checksum, msg);
                }
            }
            // nothing tells an earlier writer's manifest (or another
            // writer's) from one whose seal was removed: said, not failed
            None => self.report.warnings.push(UNSEALED.into()),
        }
    }

    pub(super) fn manifest_fields(&mut self) {
        let m = self.m;
        if let Ok(dir) = std::fs::canonicalize(self.dir) {
            let name_of = |p: Option<&Path>| p.and_then(|p| p.file_name()).map(|s| s.to_string_lossy().into_owned());
            if name_of(Some(&dir)).as_deref() != Some(m.dataset.version.as_str()) {
                self.manifest_finding("dataset.version", Check::Manifest, "differs from the version directory's name");
            }
            if name_of(dir.parent()).as_deref() != Some(m.dataset.name.as_str()) {
                self.manifest_finding("dataset.name", Check::Manifest, "differs from the parent directory's name");
            }
        }
        for (i, pair) in m.files.windows(2).enumerate() {
            if pair[0].path >= pair[1].path {
                let what = if pair[0].path == pair[1].path { "listed twice" } else { "out of order" };
                let msg = format!("{} {what}: files must be sorted by path", pair[1].path);
                self.manifest_finding(format!("files[{}]", i + 1), Check::Manifest, msg);
            }
        }
        let mut encodings = [IdEncoding::String; 6];
        let mut valid = true;
        for space in IdSpace::ALL {
            match m.id_encoding.get(space.name()).map(String::as_str) {
                Some("uuid16") => encodings[space as usize] = IdEncoding::Uuid16,
                Some("string") => {}
                other => {
                    valid = false;
                    let msg = format!("{other:?}, must be \"uuid16\" or \"string\"");
                    self.manifest_finding(format!("id_encoding.{}", space.name()), Check::Manifest, msg);
                }
            }
        }
        for key in m.id_encoding.keys().filter(|k| !IdSpace::ALL.iter().any(|s| s.name() == k.as_str())) {
            self.manifest_finding(format!("id_encoding.{key}"), Check::Manifest, "not an id space of the format");
        }
        if valid {
            self.ids = Some(IdEncodings(encodings));
        } else {
            self.report
                .skipped
                .push("schema checks: id_encoding is invalid, so the expected schemas are unknown".into());
        }
        // the rules of options a user gives: what the writer commits, verify accepts
        match m.writer.options() {
            Ok(_) => {}
            Err(Error::InvalidOption { option, reason }) => {
                self.manifest_finding(format!("writer.{option}"), Check::Manifest, reason);
            }
            Err(e) => self.manifest_finding("writer", Check::Manifest, e.to_string()),
        }
        let chunk = m.writer.chunk_max_bytes;
        self.chunk_values = (chunk > 0 && chunk.is_multiple_of(4)).then_some(chunk / 4);
        for s in &m.sources {
            saw(&mut self.seen, IdSpace::Source, &s.source_id);
        }
    }

    /// Listing, sizes and checksums; returns the present files of the format.
    pub(super) fn files(&mut self) -> Vec<(String, Kind)> {
        self.report.files_checked += 1; // manifest.json, read by verify_local
        let mut present = Vec::new();
        for (i, entry) in self.m.files.iter().enumerate() {
            // a Ctrl-C of a verify holding a copy stops it between files
            // (verify_local then returns the interrupt)
            if crate::storage::interrupted() {
                break;
            }
            let rel = entry.path.as_str();
            let location = format!("manifest files[{i}]");
            if let Some(problem) = path_problem(rel) {
                let msg = format!(
                    "path {problem}: not a file inside the version (docs/format.md \"Paths inside a version\")"
                );
                self.report.push(rel, location, Check::Listing, msg);
                continue;
            }
            if rel == MANIFEST {
                self.report.push(rel, location, Check::Listing, "manifest.json lists itself, not a data file");
                continue;
            }
            self.listed.insert(rel.to_string());
            let kind = kind_of(rel);
            if kind.is_none() {
                self.report.push(rel, &location, Check::Listing, "not a file of the format (FORMAT-BRIEF §1)");
            }
            let mut file = match open_in(self.handle, rel) {
                Err(Error::Io { source, .. }) if crate::storage::io_not_there(&source) => {
                    self.report.push(rel, location, Check::Listing, crate::storage::LISTED_BUT_MISSING);
                    continue;
                }
                Err(Error::Corrupt { reason, .. }) => {
                    self.report.push(rel, location, Check::Listing, reason);
                    continue;
                }
                Err(e) => {
                    self.report.push(rel, location, Check::Listing, format!("cannot open: {}", source_of(&e)));
                    continue;
                }
                Ok(file) => file,
            };
            match file.metadata() {
                Ok(md) if md.len() != entry.bytes => {
                    let msg = format!("{} bytes on disk, manifest.json says {}", md.len(), entry.bytes);
                    self.report.push(rel, "file", Check::Size, msg);
                }
                Ok(_) => {}
                Err(e) => self.report.push(rel, location, Check::Listing, format!("cannot stat: {e}")),
            }
            let mut h = Sha256::new();
            match std::io::copy(&mut file, &mut h).map(|_| hex::encode(h.finalize())) {
                Ok(sha) if sha != entry.sha256 => {
                    let msg = format!("sha256 {sha}, manifest.json says {}", entry.sha256);
                    self.report.push(rel, "file", Check::Checksum, msg);
                }
                Ok(_) => {}
                Err(e) => self.report.push(rel, "file", Check::Checksum, format!("unreadable: {e}")),
            }
            self.report.files_checked += 1;
            present.extend(kind.map(|k| (rel.to_string(), k)));
        }
        for required in [INDEX, SAMPLES, ANNOTATIONS] {
            if !self.listed.contains(required) {
                self.report.push(
                    required,
                    "manifest files",
                    Check::Listing,
                    "required file not listed in manifest.json",
                );
            }
        }
        let (on_disk, errors) = walk_in(self.handle);
        for (dir, e) in errors {
            self.report.push(&dir, "directory", Check::Listing, format!("cannot list: {e}"));
        }
        for Entry { rel, symlink, .. } in on_disk.iter().filter(|e| !self.listed.contains(e.rel.as_str())) {
            match (*symlink, rel.as_str()) {
                (true, _) => self.report.push(rel, "file", Check::Listing, SYMLINK),
                (false, MANIFEST) => {}
                (false, _) => self.report.push(rel, "file", Check::Listing, "on disk but not listed in manifest.json"),
            }
        }
        present
    }

    pub(super) fn expected_schema(&self, kind: &Kind) -> Option<FileSchema> {
        let ids = self.ids?;
        match kind {
            Kind::Index => tables::index_schema(ids),
            Kind::Samples => tables::samples_schema(ids),
            Kind::Annotations => tables::annotations_schema(ids),
            Kind::Shard(_) => tables::shard_schema(ids),
            Kind::Task(_) => tables::tasks_schema(ids),
        }
        .ok()
    }
}
