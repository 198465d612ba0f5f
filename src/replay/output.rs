//! Writing the replay's derived tables in bounded memory: rows gathered per (partition, open) and written as files of the run's one transaction whenever a chunk fills or the read has moved past their partition.
//!
//! The games arrive a date partition at a time ([`super::merge`]), so a
//! partition's rows are complete, apart from games that crossed midnight,
//! once the read has moved one partition further: they are written then,
//! and a late game adds a small file to its partition. Rows of games still
//! open go to "open" files, which every run rewrites. Nothing is visible
//! before the transaction commits, so a run that fails or is killed leaves
//! the lake as it was.

use std::collections::BTreeMap;

use arrow::array::RecordBatch;

use super::error::ReplayError;
use super::game::GameReplay;
use super::rows::{DepartureRow, FindingRow, GameRow, MoveRow, PlayerRow};
use crate::lake::Txn;
use crate::lake::parquet::write_sorted;
use crate::lake::tables::TableDef;

/// Rows of one table a file holds at most (a chunk). A moves row costs about 200 bytes while
/// gathered, so a full chunk of each of the few partitions in flight stays near 100 MB.
pub const CHUNK_ROWS: usize = 256 * 1024;

/// Where a game's rows go: its partition (`date=YYYY-MM-DD`) and whether it is still open.
pub type Key = (String, bool);

/// The key of a replay's rows.
pub fn key_of(r: &GameReplay) -> Key {
    let open = r.game.as_ref().is_none_or(|g| !g.closed);
    (format!("date={}", r.date), open)
}

/// Rows of the five derived tables gathered for one key, and batches carried over from old files.
#[derive(Default)]
struct Rows {
    findings: Vec<FindingRow>,
    games: Vec<GameRow>,
    players: Vec<PlayerRow>,
    moves: Vec<MoveRow>,
    departures: Vec<DepartureRow>,
    carried: BTreeMap<&'static str, Vec<RecordBatch>>,
}

impl Rows {
    fn is_empty(&self) -> bool {
        self.findings.is_empty()
            && self.games.is_empty()
            && self.players.is_empty()
            && self.moves.is_empty()
            && self.departures.is_empty()
            && self.carried.is_empty()
    }

    /// The gathered rows of `table` as batches, taken out.
    fn take(&mut self, table: &str) -> Result<Vec<RecordBatch>, ReplayError> {
        let batch = match table {
            "findings" => FindingRow::to_batch(&std::mem::take(&mut self.findings))?,
            "games" => GameRow::to_batch(&std::mem::take(&mut self.games))?,
            "game_players" => PlayerRow::to_batch(&std::mem::take(&mut self.players))?,
            "moves" => MoveRow::to_batch(&std::mem::take(&mut self.moves))?,
            _ => DepartureRow::to_batch(&std::mem::take(&mut self.departures))?,
        };
        let mut out = self.carried.remove(table).unwrap_or_default();
        if batch.num_rows() > 0 {
            out.push(batch);
        }
        Ok(out)
    }

    /// Tables whose gathered rows fill a chunk.
    fn full(&self) -> Vec<&'static str> {
        let mut out = Vec::new();
        for (name, n) in [
            ("findings", self.findings.len()),
            ("games", self.games.len()),
            ("game_players", self.players.len()),
            ("moves", self.moves.len()),
            ("departures", self.departures.len()),
        ] {
            if n >= CHUNK_ROWS {
                out.push(name);
            }
        }
        out
    }
}

/// The derived rows of a run on their way to files of its transaction.
pub struct Outputs {
    tables: Vec<TableDef>,
    buckets: BTreeMap<Key, Rows>,
    /// The latest partition of a closed game seen: older closed partitions are complete.
    newest: Option<String>,
    /// Files written so far.
    pub files: u64,
}

impl Outputs {
    pub fn new(tables: Vec<TableDef>) -> Self {
        Outputs {
            tables,
            buckets: BTreeMap::new(),
            newest: None,
            files: 0,
        }
    }

    /// Gathers every row of one replay.
    pub fn push(&mut self, txn: &mut Txn<'_, '_>, r: GameReplay) -> Result<(), ReplayError> {
        let key = key_of(&r);
        let findings = r.finding_rows();
        self.push_rows(
            txn,
            key,
            Parts {
                findings,
                game: r.game,
                players: r.players,
                moves: r.moves,
                departures: r.departures,
            },
        )
    }

    /// Gathers rows under `key`, writing what fills a chunk and the partitions the read has left.
    pub fn push_rows(
        &mut self,
        txn: &mut Txn<'_, '_>,
        key: Key,
        parts: Parts,
    ) -> Result<(), ReplayError> {
        if !key.1 && self.newest.as_ref().is_none_or(|n| key.0 > *n) {
            let before = self.newest.replace(key.0.clone());
            // The read moved on: closed partitions before the previous one are complete.
            let done: Vec<Key> = self
                .buckets
                .keys()
                .filter(|(p, open)| !open && before.as_ref().is_some_and(|b| p < b))
                .cloned()
                .collect();
            for k in done {
                self.flush(txn, &k, None)?;
            }
        }
        let rows = self.buckets.entry(key.clone()).or_default();
        rows.findings.extend(parts.findings);
        rows.games.extend(parts.game);
        rows.players.extend(parts.players);
        rows.moves.extend(parts.moves);
        rows.departures.extend(parts.departures);
        let full = rows.full();
        if !full.is_empty() {
            self.flush(txn, &key, Some(&full))?;
        }
        Ok(())
    }

    /// Adds rows kept from an old file of `table` to the next file written under `key`.
    pub fn carry(&mut self, key: Key, table: &'static str, batches: Vec<RecordBatch>) {
        if batches.is_empty() {
            return;
        }
        self.buckets
            .entry(key)
            .or_default()
            .carried
            .entry(table)
            .or_default()
            .extend(batches);
    }

    /// Writes `batches` of `table` as one file under `key` now.
    pub fn write(
        &mut self,
        txn: &mut Txn<'_, '_>,
        table: &TableDef,
        key: &Key,
        batches: &[RecordBatch],
    ) -> Result<(), ReplayError> {
        if batches.iter().all(|b| b.num_rows() == 0) {
            return Ok(());
        }
        let file = txn.new_file(table.name, Some(&key.0))?;
        let mut meta = write_sorted(&file.pending, table, table.schema(), batches)?;
        meta.open = key.1;
        txn.add_file_meta(file, meta);
        self.files += 1;
        Ok(())
    }

    /// Writes the rows gathered under `key` (of the given tables, or all).
    fn flush(
        &mut self,
        txn: &mut Txn<'_, '_>,
        key: &Key,
        only: Option<&[&'static str]>,
    ) -> Result<(), ReplayError> {
        let tables = std::mem::take(&mut self.tables);
        let mut out = Ok(());
        for table in &tables {
            if only.is_some_and(|o| !o.contains(&table.name)) {
                continue;
            }
            let Some(rows) = self.buckets.get_mut(key) else {
                break;
            };
            let batches = match rows.take(table.name) {
                Ok(b) => b,
                Err(e) => {
                    out = Err(e);
                    break;
                }
            };
            if let Err(e) = self.write(txn, table, key, &batches) {
                out = Err(e);
                break;
            }
        }
        self.tables = tables;
        if self.buckets.get(key).is_some_and(Rows::is_empty) {
            self.buckets.remove(key);
        }
        out
    }

    /// Writes everything still gathered.
    pub fn finish(&mut self, txn: &mut Txn<'_, '_>) -> Result<(), ReplayError> {
        let keys: Vec<Key> = self.buckets.keys().cloned().collect();
        for k in keys {
            self.flush(txn, &k, None)?;
        }
        Ok(())
    }
}

/// Rows of one game (or of part of it) to gather.
#[derive(Default)]
pub struct Parts {
    pub findings: Vec<FindingRow>,
    pub game: Option<GameRow>,
    pub players: Vec<PlayerRow>,
    pub moves: Vec<MoveRow>,
    pub departures: Vec<DepartureRow>,
}
