//! The durable half: redb tables for the objects, the change log and the revision. One
//! write transaction per store write, committed with redb's default `Immediate`
//! durability (fsync) before the write is acknowledged.

use std::path::Path;

use redb::{Database, ReadableDatabase, ReadableTable, TableDefinition};

use bytes::Bytes;

use crate::error::failed;

/// `Kind/namespace/name` → the object's JSON.
const OBJECTS: TableDefinition<&str, &[u8]> = TableDefinition::new("objects");
/// Revision → change type byte followed by the object's JSON.
const LOG: TableDefinition<u64, &[u8]> = TableDefinition::new("changes");
const META: TableDefinition<&str, u64> = TableDefinition::new("meta");
const REVISION: &str = "revision";
/// redb's page cache. Its default (1 GiB) let it keep every page it ever touched: the
/// whole file, 13 MiB of heap after 500 pods came and went, held for good. Every object
/// is in memory above it already (reads never reach redb); the cache only serves the
/// B-tree pages a write walks, and the OS page cache serves the rest.
const CACHE_BYTES: usize = 1 << 20;

/// One write's effect on disk.
#[derive(Default)]
pub(crate) struct Batch {
    pub puts: Vec<(String, Bytes)>,
    pub deletes: Vec<String>,
    /// (revision, change type, object JSON).
    pub log: Vec<(u64, u8, Bytes)>,
    pub revision: u64,
    /// Log entries below this revision are dropped.
    pub keep_from: u64,
}

/// What the database held at open.
pub(crate) struct Loaded {
    pub objects: Vec<Vec<u8>>,
    pub log: Vec<(u64, u8, Vec<u8>)>,
    pub revision: u64,
}

pub(crate) struct Db(Database);

/// The database file, made readable by its owner alone before anything is written to it
/// (it holds every Secret); one an older podvisor left readable is made so too.
fn owner_only(path: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .open(path)?;
    f.set_permissions(std::fs::Permissions::from_mode(0o600))
}

impl Db {
    pub fn open(path: &Path) -> Result<(Db, Loaded), podvisor_client::Error> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(failed)?;
        }
        owner_only(path).map_err(failed)?;
        let db = Database::builder()
            .set_cache_size(CACHE_BYTES)
            .create(path)
            .map_err(failed)?;
        // Create the tables, so that reading a new database finds them.
        let w = db.begin_write().map_err(failed)?;
        {
            w.open_table(OBJECTS).map_err(failed)?;
            w.open_table(LOG).map_err(failed)?;
            w.open_table(META).map_err(failed)?;
        }
        w.commit().map_err(failed)?;
        let loaded = Self::load(&db)?;
        Ok((Db(db), loaded))
    }

    fn load(db: &Database) -> Result<Loaded, podvisor_client::Error> {
        let r = db.begin_read().map_err(failed)?;
        let objects = r.open_table(OBJECTS).map_err(failed)?;
        let objects = objects
            .iter()
            .map_err(failed)?
            .map(|e| e.map(|(_, v)| v.value().to_vec()).map_err(failed))
            .collect::<Result<_, _>>()?;
        let log = r.open_table(LOG).map_err(failed)?;
        let log = log
            .iter()
            .map_err(failed)?
            .map(|e| {
                let (k, v) = e.map_err(failed)?;
                let v = v.value();
                let body = v.get(1..).unwrap_or_default().to_vec();
                Ok((k.value(), v.first().copied().unwrap_or(0), body))
            })
            .collect::<Result<_, podvisor_client::Error>>()?;
        let meta = r.open_table(META).map_err(failed)?;
        let revision = meta.get(REVISION).map_err(failed)?.map_or(0, |v| v.value());
        Ok(Loaded {
            objects,
            log,
            revision,
        })
    }

    pub fn commit(&self, b: &Batch) -> Result<(), podvisor_client::Error> {
        let w = self.0.begin_write().map_err(failed)?;
        {
            let mut objects = w.open_table(OBJECTS).map_err(failed)?;
            for (k, v) in &b.puts {
                objects.insert(k.as_str(), v.as_ref()).map_err(failed)?;
            }
            for k in &b.deletes {
                objects.remove(k.as_str()).map_err(failed)?;
            }
            let mut log = w.open_table(LOG).map_err(failed)?;
            let mut entry = Vec::new();
            for (rev, t, json) in &b.log {
                entry.clear();
                entry.push(*t);
                entry.extend_from_slice(json);
                log.insert(*rev, entry.as_slice()).map_err(failed)?;
            }
            log.retain_in(..b.keep_from, |_, _| false).map_err(failed)?;
            let mut meta = w.open_table(META).map_err(failed)?;
            meta.insert(REVISION, b.revision).map_err(failed)?;
        }
        w.commit().map_err(failed)
    }
}
