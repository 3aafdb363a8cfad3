//! `verify`'s Parquet checks: footer and schema of every file, every page of
//! every column chunk walked (headers, counts, CRC-32, encodings, offset index),
//! and the shard layout rules from the footers.

#[allow(clippy::wildcard_imports)]
use super::*;

/// One-line description of a schema node, for schema findings.
pub(super) fn describe(t: &Type) -> String {
    let info = t.get_basic_info();
    let rep = if info.has_repetition() { format!("{} ", info.repetition()) } else { String::new() };
    let logical = info.logical_type_ref().map(|l| format!(" ({l:?})")).unwrap_or_default();
    match t {
        Type::PrimitiveType { physical_type, type_length, .. } => {
            let len = if *type_length > 0 { format!("({type_length})") } else { String::new() };
            format!("{rep}{physical_type}{len}{logical}")
        }
        Type::GroupType { fields, .. } => {
            let names: Vec<&str> = fields.iter().map(|f| f.name()).collect();
            format!("{rep}group{logical} [{}]", names.join(", "))
        }
    }
}

/// Differences between a file's schema and the format's, as (column, message).
pub(super) fn schema_diffs(path: &str, actual: &Type, expected: &Type, out: &mut Vec<(String, String)>) {
    let (a, e) = (actual.get_basic_info(), expected.get_basic_info());
    let is_root = path.is_empty();
    let same_node = match (actual, expected) {
        (
            Type::PrimitiveType { physical_type: pa, type_length: la, .. },
            Type::PrimitiveType { physical_type: pe, type_length: le, .. },
        ) => pa == pe && (*pe != parquet::basic::Type::FIXED_LEN_BYTE_ARRAY || la == le),
        (Type::GroupType { fields: fa, .. }, Type::GroupType { fields: fe, .. }) => {
            fa.len() == fe.len() && fa.iter().zip(fe).all(|(x, y)| x.name() == y.name())
        }
        _ => false,
    };
    let same = same_node
        && (is_root
            || (a.name() == e.name()
                && a.has_repetition() == e.has_repetition()
                && (!e.has_repetition() || a.repetition() == e.repetition())
                && a.logical_type_ref() == e.logical_type_ref()));
    if !same {
        let column = if is_root { "schema".to_string() } else { path.to_string() };
        out.push((column, format!("expected {}, found {}", describe(expected), describe(actual))));
        return;
    }
    if let (Type::GroupType { fields: fa, .. }, Type::GroupType { fields: fe, .. }) = (actual, expected) {
        for (x, y) in fa.iter().zip(fe) {
            let child = if is_root { y.name().to_string() } else { format!("{path}.{}", y.name()) };
            schema_diffs(&child, x, y, out);
        }
    }
}

/// Why the pages of a column chunk break its pin, if they do.
pub(super) fn pin_problem(pin: Pin, dictionary_page: bool, encodings: &[Encoding]) -> Option<String> {
    let only = |want: Encoding| !encodings.is_empty() && encodings.iter().all(|e| *e == want);
    let ok = match pin {
        Pin::Dictionary => {
            dictionary_page
                && !encodings.is_empty()
                && encodings.iter().all(|e| matches!(e, Encoding::RLE_DICTIONARY | Encoding::PLAIN_DICTIONARY))
        }
        Pin::Plain => !dictionary_page && only(Encoding::PLAIN),
        Pin::Delta => !dictionary_page && only(Encoding::DELTA_BINARY_PACKED),
        Pin::ByteStreamSplit => !dictionary_page && only(Encoding::BYTE_STREAM_SPLIT),
    };
    let dict = if dictionary_page { "a dictionary page and " } else { "" };
    (!ok).then(|| format!("pinned {pin:?}, found {dict}data pages encoded {encodings:?}"))
}

/// The two forms of TimeF v1 column types (`docs/format.md`, "Column types").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ColumnTypes {
    /// uuid16 without a logical type; key/value lists (written since 2026-11-30).
    Current,
    /// uuid16 with the Parquet `UUID` logical type; MAP (written before).
    Earlier,
}

impl ColumnTypes {
    pub(super) fn describe(self) -> &'static str {
        match self {
            ColumnTypes::Current => "current (uuid16 without UUID logical type, key/value list)",
            ColumnTypes::Earlier => "earlier (UUID logical type, MAP)",
        }
    }
}

impl Verifier<'_> {
    /// Footer, schema, page index and every page of one Parquet file.
    pub(super) fn parquet(&mut self, rel: String, kind: Kind) {
        let path = self.dir.join(&rel);
        let file = match open_in(self.handle, &rel) {
            Ok(f) => f,
            Err(e) => {
                self.report.push(&rel, "file", Check::Footer, format!("cannot open: {}", source_of(&e)));
                return;
            }
        };
        let file_len = file.metadata().map(|m| m.len()).unwrap_or(0);
        let mut magic = [0u8; 4];
        if (&file).read_exact(&mut magic).is_err() || &magic != b"PAR1" {
            self.report.push(&rel, "byte 0", Check::Footer, "the file does not start with the Parquet magic PAR1");
        }
        let meta = match guard(|| ParquetMetaDataReader::new().parse_and_finish(&file).map_err(|e| e.to_string())) {
            Ok(m) => Arc::new(m),
            Err(e) => {
                self.report.push(&rel, "footer", Check::Footer, format!("unreadable: {e}"));
                return;
            }
        };
        let expected = self.expected_schema(&kind);
        let schema_ok = match &expected {
            Some(s) => {
                let actual = meta.file_metadata().schema();
                let mut diffs = Vec::new();
                schema_diffs("", actual, s.descr.root_schema(), &mut diffs);
                let current = diffs.is_empty();
                let earlier = s.earlier().is_ok_and(|e| {
                    let mut d = Vec::new();
                    schema_diffs("", actual, e.descr.root_schema(), &mut d);
                    d.is_empty()
                });
                match (current, earlier) {
                    (false, false) => {
                        for (column, msg) in &diffs {
                            self.report.push(&rel, format!("column {column}"), Check::Schema, msg.as_str());
                        }
                    }
                    (true, true) => {}
                    (true, false) => self.column_types(&rel, ColumnTypes::Current),
                    (false, true) => self.column_types(&rel, ColumnTypes::Earlier),
                }
                current || earlier
            }
            None => false,
        };
        let pins = expected.filter(|_| schema_ok).map(|s| s.pins);
        let page_index = match guard(|| {
            ParquetMetaDataReader::new()
                .with_page_index_policy(PageIndexPolicy::Optional)
                .parse_and_finish(&file)
                .map_err(|e| e.to_string())
        }) {
            Ok(m) => Some(m),
            Err(e) => {
                self.report.push(&rel, "page index", Check::PageIndex, format!("unreadable: {e}"));
                None
            }
        };
        let mut bad_row_groups = BTreeSet::new();
        // overlapping column chunks would read one chunk's pages as another's: no row group is decoded
        if let Some(problem) = crate::footer::overlap_problem(&meta) {
            self.report.push(&rel, "footer", Check::Footer, problem);
            bad_row_groups.extend(0..meta.num_row_groups());
        }
        // a footer claiming more rows than the manifest lists (a counts finding of its own) is not
        // decoded: the decoder would reserve what it claims (docs/format.md "Limits a reader checks");
        // fewer are decoded, for the findings their rows give
        let listed_rows = self.m.files.iter().find(|e| e.path == rel).map(|e| e.rows);
        if listed_rows.is_some_and(|rows| u64::try_from(meta.file_metadata().num_rows()).map_or(true, |n| n > rows)) {
            bad_row_groups.extend(0..meta.num_row_groups());
        }
        for rg in 0..meta.num_row_groups() {
            for c in 0..meta.row_group(rg).num_columns() {
                let pin = pins.as_ref().and_then(|p| p.get(c).copied());
                if !self.column_chunk(&rel, &file, file_len, &meta, (rg, c), pin, page_index.as_ref()) {
                    bad_row_groups.insert(rg);
                }
            }
        }
        self.files.push(PqFile { rel, path, file, kind, meta, schema_ok, bad_row_groups });
    }

    /// Records that `rel` uses `types` (its schema matches only that form);
    /// a version's files all use one form, so a second form is a finding.
    pub(super) fn column_types(&mut self, rel: &str, types: ColumnTypes) {
        match &self.column_types {
            None => self.column_types = Some((types, rel.to_string())),
            Some((first, by)) if *first != types => {
                let msg = format!(
                    "has the {} column types, {by} the {} ones: a version uses one form (docs/format.md, \"Column types\")",
                    types.describe(),
                    first.describe()
                );
                self.report.push(rel, "schema", Check::Schema, msg);
            }
            Some(_) => {}
        }
    }

    /// Checks one column chunk's metadata and walks its pages; false when its
    /// pages are broken, so the reader must not be run on its row group.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn column_chunk(
        &mut self,
        rel: &str,
        file: &File,
        file_len: u64,
        meta: &ParquetMetaData,
        (rg, c): (usize, usize),
        pin: Option<Pin>,
        page_index: Option<&ParquetMetaData>,
    ) -> bool {
        let rows = meta.row_group(rg).num_rows();
        let col = meta.row_group(rg).column(c);
        let name = col.column_path().string();
        let at = format!("row group {rg}, column {name}");
        let report = &mut self.report;
        if !matches!(col.compression(), Compression::ZSTD(_)) {
            report.push(rel, &at, Check::Encoding, format!("compression {}, the format pins ZSTD", col.compression()));
        }
        if rows > 0 {
            for (missing, what) in [
                (col.statistics().is_none(), "no column statistics"),
                (col.column_index_offset().is_none(), "no column index"),
                (col.offset_index_offset().is_none(), "no offset index"),
            ] {
                if missing {
                    report.push(rel, &at, Check::PageIndex, what);
                }
            }
        }
        let start = col.dictionary_page_offset().filter(|&o| o > 0).unwrap_or(col.data_page_offset());
        let len = col.compressed_size();
        // column data lies between the leading magic and the footer's length and magic
        let (Ok(start), Ok(len)) = (u64::try_from(start), u64::try_from(len)) else {
            report.push(rel, &at, Check::PageHeader, format!("negative offset {start} or length {len} in the footer"));
            return false;
        };
        if start < 4 || start.saturating_add(len) > file_len.saturating_sub(8) {
            let msg = format!("column chunk [{start}, {}) lies outside the file's data", start.saturating_add(len));
            report.push(rel, &at, Check::PageHeader, msg);
            return false;
        }
        let mut reader = file;
        if let Err(e) = reader.seek(SeekFrom::Start(start)) {
            report.push(rel, &at, Check::PageHeader, format!("cannot seek: {e}"));
            return false;
        }
        let (mut ok, mut walked) = (true, true);
        let (mut values, mut dictionary_pages) = (0i64, 0usize);
        let mut encodings: Vec<Encoding> = Vec::new();
        let mut data_pages: Vec<(u64, u64)> = Vec::new();
        for (i, page) in chunk_pages(reader.take(len), start, len).enumerate() {
            let page_at = format!("{at}, page {i}");
            let page = match page {
                Ok(p) => p,
                Err(e) => {
                    report.push(rel, page_at, Check::PageHeader, e.to_string());
                    (ok, walked) = (false, false);
                    break;
                }
            };
            report.pages_checked += 1;
            match page.header.crc {
                None => report.push(rel, &page_at, Check::PageCrc, "the page carries no CRC-32"),
                Some(crc) if crc as u32 != page.body_crc32 => {
                    let msg = format!(
                        "CRC-32 {:08x} in the header, {:08x} over the page as stored (byte {})",
                        crc as u32,
                        page.body_crc32,
                        page.body_offset()
                    );
                    report.push(rel, &page_at, Check::PageCrc, msg);
                    ok = false;
                }
                Some(_) => {}
            }
            // counts checked before the row group is handed to the decoder, which reserves them
            let counts = if name == VALUES_LEAF {
                values_header_problem(&page.header, u64::MAX)
            } else {
                count_problem(&page.header)
            };
            if let Some(problem) = counts {
                report.push(rel, &page_at, Check::PageHeader, problem);
                ok = false;
            }
            match page.header.kind {
                PageKind::Dictionary { .. } => {
                    if i > 0 {
                        report.push(
                            rel,
                            &page_at,
                            Check::PageHeader,
                            "a dictionary page that is not the chunk's first",
                        );
                        ok = false;
                    }
                    dictionary_pages += 1;
                }
                PageKind::Data { num_values, encoding, .. } | PageKind::DataV2 { num_values, encoding, .. } => {
                    values += i64::from(num_values);
                    if !encodings.contains(&encoding) {
                        encodings.push(encoding);
                    }
                    data_pages.push((page.offset, page.total_len()));
                }
                PageKind::Index => {
                    report.push(rel, &page_at, Check::PageHeader, "an index page inside a column chunk");
                    ok = false;
                }
            }
        }
        if !walked {
            return false;
        }
        if values != col.num_values() {
            let msg = format!("data pages hold {values} values, the footer says {}", col.num_values());
            report.push(rel, &at, Check::PageHeader, msg);
            ok = false;
        }
        if let Some(problem) =
            pin.filter(|_| col.num_values() > 0).and_then(|p| pin_problem(p, dictionary_pages > 0, &encodings))
        {
            report.push(rel, &at, Check::Encoding, problem);
        }
        if let Some(pi) = page_index.filter(|_| rows > 0 && col.offset_index_offset().is_some()) {
            match pi.page_index_for_row_group(rg).page_locations(c) {
                None => report.push(rel, &at, Check::PageIndex, "the offset index did not load"),
                Some(locations) => {
                    let listed: Vec<(u64, u64)> = locations
                        .iter()
                        .map(|l| {
                            (
                                u64::try_from(l.offset).unwrap_or(u64::MAX),
                                u64::try_from(l.compressed_page_size).unwrap_or(0),
                            )
                        })
                        .collect();
                    if listed != data_pages {
                        let msg = format!(
                            "the offset index lists pages (offset, size) {listed:?}, the chunk holds data pages {data_pages:?}"
                        );
                        report.push(rel, &at, Check::PageIndex, msg);
                    }
                }
            }
        }
        ok
    }

    /// Shard numbering and the row-group and shard size rules, from the footers.
    pub(super) fn layout(&mut self) {
        let w = &self.m.writer;
        let shards: Vec<(u32, &PqFile)> = self
            .files
            .iter()
            .filter_map(|f| match f.kind {
                Kind::Shard(n) => Some((n, f)),
                _ => None,
            })
            .collect();
        let listed_shards = self.listed.iter().filter(|r| matches!(kind_of(r), Some(Kind::Shard(_)))).count();
        for (i, rel) in self.listed.iter().filter(|r| matches!(kind_of(r), Some(Kind::Shard(_)))).enumerate() {
            let want = shard_path(i as u32);
            if *rel != want {
                self.report.push(
                    rel,
                    "file name",
                    Check::Listing,
                    format!("shards are not numbered consecutively: expected {want}"),
                );
            }
        }
        for (n, f) in &shards {
            let Some(leaf) =
                f.meta.file_metadata().schema_descr().columns().iter().position(|c| c.path().string() == VALUES_LEAF)
            else {
                continue;
            };
            let last_shard = *n as usize + 1 == listed_shards;
            let mut total = 0u64;
            let groups = f.meta.num_row_groups();
            for rg in 0..groups {
                let values = u64::try_from(f.meta.row_group(rg).column(leaf).num_values()).unwrap_or(0);
                let bytes = values * 4;
                total += values;
                let at = format!("row group {rg}");
                if values >= 1 << 31 {
                    self.report.push(&f.rel, &at, Check::Chunking, format!("{values} values: 2^31 or more"));
                }
                if bytes > w.row_group_max_bytes {
                    let msg = format!("{bytes} value bytes, over writer.row_group_max_bytes {}", w.row_group_max_bytes);
                    self.report.push(&f.rel, &at, Check::Chunking, msg);
                }
                if rg + 1 < groups && bytes <= w.row_group_target_bytes {
                    let msg = format!(
                        "{bytes} value bytes, cut before passing writer.row_group_target_bytes {}",
                        w.row_group_target_bytes
                    );
                    self.report.push(&f.rel, &at, Check::Chunking, msg);
                }
            }
            if !last_shard && total * 4 <= w.shard_target_bytes {
                let msg = format!(
                    "closed at {} value bytes, before passing writer.shard_target_bytes {}",
                    total * 4,
                    w.shard_target_bytes
                );
                self.report.push(&f.rel, "file", Check::Chunking, msg);
            }
            if total * 4 > w.shard_max_bytes {
                let msg = format!("{} value bytes, over writer.shard_max_bytes {}", total * 4, w.shard_max_bytes);
                self.report.push(&f.rel, "file", Check::Chunking, msg);
            }
        }
    }
}
