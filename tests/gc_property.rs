//! Property tests of `gc` (docs/format.md §1 "Clearing a dead writer's
//! claim"): over random local and object-store trees of committed versions,
//! live and dead writers' leftovers of any age and a user's files, `gc` of a
//! root or of a dataset removes exactly the dead writers' leftovers old
//! enough, and nothing else. Ages are set on the files (local) or by a store
//! that reports the times the test gives (object store).

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use futures::StreamExt;
use object_store::path::Path as ObjPath;
use object_store::{ObjectStore, ObjectStoreExt};
use proptest::prelude::*;
use timef::storage::{gc, gc_dry_run, Location, CLAIM, PARTS_MARKER};

use common::*;

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap()
}

/// One entry of a random local tree.
#[derive(Debug, Clone)]
enum Plant {
    /// A committed version (`manifest.json` and a shard).
    Committed,
    /// A writer's staging directory (`.tmp-*` or `.new-*`): live (its `flock`
    /// held), and old (two hours) or young.
    Staging { new: bool, live: bool, old: bool },
    /// A user's file in the dataset, in a folder of it, in a hidden folder,
    /// in a folder named almost like a staging directory, in a folder named
    /// exactly like one inside a folder of the dataset (two hours old), or a
    /// user's `manifest.json` in a folder of the dataset.
    Foreign(u8),
}

fn plant_strategy() -> impl Strategy<Value = Plant> {
    prop_oneof![
        Just(Plant::Committed),
        (any::<bool>(), any::<bool>(), any::<bool>()).prop_map(|(new, live, old)| Plant::Staging { new, live, old }),
        (0u8..6).prop_map(Plant::Foreign),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// Over random local trees of datasets (committed versions, live and dead
    /// writers' staging of any age, a user's files), `gc` of the root or of
    /// one dataset removes exactly the dead writers' staging directories old
    /// enough, in its scope, and every other byte stays.
    #[test]
    fn local_gc_removes_exactly_the_dead_writers_leftovers(
        datasets in proptest::collection::vec(proptest::collection::vec(plant_strategy(), 0..6), 1..4),
        of_dataset in any::<bool>(),
    ) {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("root");
        std::fs::create_dir_all(&root).unwrap();
        std::fs::write(root.join("top.txt"), b"user").unwrap();
        let old = SystemTime::now() - Duration::from_secs(7200);
        let mut locks = Vec::new();
        let mut dead: BTreeSet<std::path::PathBuf> = BTreeSet::new();
        for (d, plants) in datasets.iter().enumerate() {
            let ds = root.join(format!("d{d}"));
            std::fs::create_dir_all(&ds).unwrap();
            for (i, p) in plants.iter().enumerate() {
                match p {
                    Plant::Committed => {
                        std::fs::create_dir_all(ds.join(format!("v{i}/time_series"))).unwrap();
                        std::fs::write(ds.join(format!("v{i}/manifest.json")), format!("{{\"format\": \"timef\", \"v\": {i}}}")).unwrap();
                        std::fs::write(ds.join(format!("v{i}/time_series/shard-00000.parquet")), [i as u8; 9]).unwrap();
                    }
                    Plant::Staging { new, live, old: is_old } => {
                        let name = format!(".{}-v{i}-{:0>32}", if *new { "new" } else { "tmp" }, i);
                        let dir = ds.join(&name);
                        std::fs::create_dir_all(dir.join("time_series")).unwrap();
                        std::fs::write(dir.join("time_series/shard-00000.parquet"), b"partial").unwrap();
                        if *is_old {
                            std::fs::File::open(&dir).unwrap().set_modified(old).unwrap();
                        }
                        if *live {
                            let f = std::fs::File::open(&dir).unwrap();
                            rustix::fs::flock(&f, rustix::fs::FlockOperation::LockExclusive).unwrap();
                            locks.push(f);
                        } else if *is_old {
                            dead.insert(dir);
                        }
                    }
                    Plant::Foreign(k) => {
                        let rel = match k {
                            0 => format!("notes-{i}.txt"),
                            1 => format!("folder-{i}/notes.txt"),
                            2 => format!(".cache-{i}/notes.txt"),
                            3 => format!(".tmp-v{i}-short/notes.txt"),
                            4 => format!("folder-{i}/.tmp-v{i}-{:0>32}/notes.txt", i),
                            _ => format!("folder-{i}/manifest.json"),
                        };
                        std::fs::create_dir_all(ds.join(&rel).parent().unwrap()).unwrap();
                        std::fs::write(ds.join(&rel), b"{}").unwrap();
                        if *k == 4 {
                            let dir = ds.join(&rel);
                            let dir = dir.parent().unwrap();
                            std::fs::File::open(dir).unwrap().set_modified(old).unwrap();
                            // staging is found at a dataset's level only: a
                            // place with no writer's mark of its own is a root,
                            // whose folder with staging is a dataset
                            let marked = plants.iter().any(|p| !matches!(p, Plant::Foreign(_)));
                            if d == 0 && of_dataset && !marked {
                                dead.insert(dir.to_path_buf());
                            }
                        }
                    }
                }
            }
        }
        let place = if of_dataset { root.join("d0") } else { root.clone() };
        let in_scope: BTreeSet<std::path::PathBuf> = dead.iter().filter(|d| d.starts_with(&place)).cloned().collect();
        // the first dataset with nothing that marks it is no dataset: gc of it finds nothing
        let before = file_bytes(&root);
        let report = gc(&Location::local(&place), 3600).unwrap();
        let removed: BTreeSet<std::path::PathBuf> = report.removed_claims.iter().map(std::path::PathBuf::from).collect();
        prop_assert_eq!(&removed, &in_scope);
        let mut want = before.clone();
        want.retain(|f, _| !in_scope.iter().any(|d| root.join(f).starts_with(d)));
        prop_assert_eq!(file_bytes(&root), want);
        drop(locks);
    }
}

/// The modification times the test sets (by key prefix) for the objects a
/// [`store::Passing`] lists, so ages can be random.
#[derive(Debug, Default)]
struct Ages(std::sync::Mutex<BTreeMap<String, chrono::DateTime<chrono::Utc>>>);

type Aged = store::Passing<Ages>;

impl Ages {
    fn set(&self, prefix: &str, age_s: u64) {
        let t = chrono::Utc::now() - chrono::Duration::seconds(age_s as i64);
        self.0.lock().unwrap().insert(prefix.to_string(), t);
    }
}

/// Each listed object with the time of the longest prefix its key starts with
/// (and so it is when a GET returns it).
impl store::Watch for Ages {
    fn got_meta(&self, m: object_store::ObjectMeta) -> object_store::ObjectMeta {
        self.listed(m)
    }
    fn listed(&self, mut m: object_store::ObjectMeta) -> object_store::ObjectMeta {
        let key = m.location.to_string();
        let ages = self.0.lock().unwrap();
        if let Some((_, t)) = ages.iter().filter(|(p, _)| key.starts_with(p.as_str())).max_by_key(|(p, _)| p.len()) {
            m.last_modified = *t;
        }
        m
    }
}

/// One version-level entry of a random object-store dataset.
#[derive(Debug, Clone)]
enum ObjPlant {
    /// A committed version (manifest and a shard), with a stray claim of some age or none.
    Committed { stray_claim: Option<bool> },
    /// A writer's claim and objects: claim old or young, newest object old or young.
    Claimed { claim_old: bool, objects_old: bool },
    /// A distributed write: its claim (old, young or gone) and its marked
    /// parts' prefix (newest object old or young).
    Distributed { claim: Option<bool>, parts_old: bool },
    /// A `.tmp-*` prefix without the marker, or a user's folder, or a user's
    /// file; a user's `_timef_claim.json` (no writer id) beside a file, a
    /// user's `manifest.json` (not TimeF), a `.tmp-*` prefix whose marker
    /// holds another write id.
    Foreign(u8),
}

fn obj_plant_strategy() -> impl Strategy<Value = ObjPlant> {
    prop_oneof![
        proptest::option::of(any::<bool>()).prop_map(|stray_claim| ObjPlant::Committed { stray_claim }),
        (any::<bool>(), any::<bool>())
            .prop_map(|(claim_old, objects_old)| ObjPlant::Claimed { claim_old, objects_old }),
        (proptest::option::of(any::<bool>()), any::<bool>())
            .prop_map(|(claim, parts_old)| ObjPlant::Distributed { claim, parts_old }),
        (0u8..6).prop_map(ObjPlant::Foreign),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// Over random object-store trees (committed versions with or without a
    /// stray claim, writers' claims and objects, distributed writes' claims
    /// and marked parts' prefixes, unmarked and foreign objects, each old or
    /// young), `gc --older-than-s 3600` of the root or of one dataset removes
    /// exactly: dead claims (claim and what its writer wrote, all an hour
    /// old), with their version's objects when it has no manifest; marked
    /// parts' prefixes an hour old that no live claim holds; gc's fence stays
    /// at each cleared version's manifest key. Its dry run and `ls`'s count
    /// say the same.
    #[test]
    fn object_store_gc_removes_exactly_the_dead_writers_leftovers(
        datasets in proptest::collection::vec(proptest::collection::vec(obj_plant_strategy(), 0..5), 1..3),
        of_dataset in any::<bool>(),
    ) {
        let store = Arc::new(Aged::default());
        let root = Location::from_object_store(store.clone(), "memory://aged", "root").unwrap();
        let rt = rt();
        let put = |key: &str, body: Vec<u8>| {
            rt.block_on(store.put(&ObjPath::from(format!("root/{key}")), body.into())).unwrap();
        };
        let claim = |id: &str| serde_json::to_vec(&serde_json::json!({
            "writer_id": id, "created_at_unix_s": 0, "created_by": "test"
        })).unwrap();
        let age = |key: &str, old: bool| store.watch.set(&format!("root/{key}"), if old { 7200 } else { 0 });
        put("top.txt", b"user".to_vec());
        // every object key that must go
        let mut dead: BTreeSet<String> = BTreeSet::new();
        for (d, plants) in datasets.iter().enumerate() {
            for (i, p) in plants.iter().enumerate() {
                let v = format!("d{d}/v{i}");
                let id = format!("{:0>32x}", d * 100 + i);
                match p {
                    ObjPlant::Committed { stray_claim } => {
                        put(&format!("{v}/manifest.json"), br#"{"format":"timef"}"#.to_vec());
                        put(&format!("{v}/time_series/shard-00000.parquet"), vec![i as u8; 5]);
                        age(&v, true);
                        if let Some(old) = stray_claim {
                            put(&format!("{v}/{CLAIM}"), claim(&id));
                            age(&format!("{v}/{CLAIM}"), *old);
                            if *old {
                                dead.insert(format!("{v}/{CLAIM}"));
                            }
                        }
                    }
                    ObjPlant::Claimed { claim_old, objects_old } => {
                        put(&format!("{v}/{CLAIM}"), claim(&id));
                        put(&format!("{v}/time_series/shard-00000.parquet"), b"partial".to_vec());
                        age(&format!("{v}/time_series"), *objects_old);
                        age(&format!("{v}/{CLAIM}"), *claim_old);
                        if *claim_old && *objects_old {
                            dead.insert(format!("{v}/{CLAIM}"));
                            dead.insert(format!("{v}/time_series/shard-00000.parquet"));
                        }
                    }
                    ObjPlant::Distributed { claim: claimed, parts_old } => {
                        let parts = format!("d{d}/.tmp-v{i}-{id}");
                        put(&format!("{parts}/{PARTS_MARKER}"), format!(r#"{{"write_id":"{id}"}}"#).into_bytes());
                        put(&format!("{parts}/time_series/shard-00000.parquet"), b"part".to_vec());
                        age(&parts, *parts_old);
                        let live_claim = match claimed {
                            Some(old) => {
                                put(&format!("{v}/{CLAIM}"), claim(&id));
                                age(&format!("{v}/{CLAIM}"), *old);
                                // live while the claim or its parts are young
                                let live = !*old || !*parts_old;
                                if !live {
                                    dead.insert(format!("{v}/{CLAIM}"));
                                }
                                live
                            }
                            None => false,
                        };
                        if !live_claim && *parts_old {
                            dead.insert(format!("{parts}/{PARTS_MARKER}"));
                            dead.insert(format!("{parts}/time_series/shard-00000.parquet"));
                        }
                    }
                    ObjPlant::Foreign(k) => {
                        let keys = match k {
                            0 => vec![format!("d{d}/.tmp-v{i}-{id}/shard-00000.parquet")],
                            1 => vec![format!("d{d}/folder-{i}/notes.txt")],
                            2 => vec![format!("d{d}/notes-{i}.txt")],
                            3 => vec![format!("{v}/{CLAIM}"), format!("{v}/data.csv")],
                            4 => vec![format!("d{d}/folder-{i}/manifest.json")],
                            _ => vec![format!("d{d}/.tmp-v{i}-{id}/{PARTS_MARKER}"), format!("d{d}/.tmp-v{i}-{id}/x.bin")],
                        };
                        for key in keys {
                            put(&key, br#"{"write_id":"ffffffffffffffffffffffffffffffff"}"#.to_vec());
                            age(&key, true);
                        }
                    }
                }
            }
        }
        let all: BTreeSet<String> = keys(&*store);
        let place = if of_dataset { "d0/".to_string() } else { String::new() };
        let in_scope: BTreeSet<String> = dead.iter().filter(|k| k.starts_with(&place)).cloned().collect();
        let at = if of_dataset { root.join("d0") } else { root.clone() };
        if of_dataset && !all.iter().any(|k| k.starts_with("d0/")) {
            // nothing planted under d0: a missing prefix, as a missing local directory
            for err in [gc_dry_run(&at, 3600).unwrap_err(), gc(&at, 3600).unwrap_err()] {
                prop_assert!(matches!(err, timef::Error::Missing { .. }), "{:?}", err);
            }
            prop_assert_eq!(keys(&*store), all);
            return Ok(());
        }
        let dry = gc_dry_run(&at, 3600).unwrap();
        let stale = timef::storage::stale_per_dataset(&at, 3600).unwrap();
        prop_assert_eq!(&stale, &dry.per_dataset);
        let report = gc(&at, 3600).unwrap();
        prop_assert_eq!(&report, &dry);
        let removed: BTreeSet<String> =
            report.removed_files.iter().map(|u| u.strip_prefix("memory://aged/root/").unwrap().to_string()).collect();
        prop_assert_eq!(&removed, &in_scope);
        // gc's fence stays at the manifest key of each dead claim's version without one
        let fences: BTreeSet<String> = in_scope
            .iter()
            .filter_map(|k| k.strip_suffix(CLAIM))
            .map(|v| format!("{v}manifest.json"))
            .filter(|m| !all.contains(m))
            .collect();
        let left: BTreeSet<String> = all.difference(&in_scope).cloned().chain(fences).collect();
        prop_assert_eq!(keys(&*store), left);
    }
}

/// Every key under `root/` of `store`, relative to it.
fn keys(store: &dyn ObjectStore) -> BTreeSet<String> {
    let prefix = ObjPath::from("root");
    let metas: Vec<_> = rt().block_on(store.list(Some(&prefix)).collect::<Vec<_>>());
    metas.into_iter().map(|m| m.unwrap().location.as_ref().strip_prefix("root/").unwrap().to_string()).collect()
}
