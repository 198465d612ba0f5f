//! Recalling games the stream's index let go of: their rows in the lake's `games` table, found by name or by seed and commitment.
//!
//! The stream's [`GameIndex`] keeps only open games and games closed within
//! a retention period ([`GameIndex::evict`]), so that its memory follows the
//! recent games, not the whole history. Before a run uses the index, it
//! recalls what the run needs of the older games: every touched game the
//! index does not hold (a brand-new game, or a late line of an old one),
//! and every game of the lake that used a seed or commitment the run sees.
//! With those put back, the index answers every question of the run as a
//! complete one would.
//!
//! The lookup reads, in each closed `games` file, only the row groups whose
//! bloom filters on `game`, `commitment` or `seed` may hold a wanted value.

use std::collections::BTreeSet;
use std::fs::File;
use std::path::Path;

use arrow::array::{Array, AsArray, RecordBatch};
use parquet::arrow::ProjectionMask;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

use super::error::ReplayError;
use super::index::GameIndex;
use crate::lake::State;

/// What a recall did, for the run's log.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RecallStats {
    /// Games put back into the index.
    pub games: usize,
    /// Files whose filters were read, and row groups decoded.
    pub files: usize,
    pub row_groups: usize,
}

/// The `games` columns the index is made of.
pub const COLUMNS: [&str; 5] = ["game", "closed", "last_ts", "commitment", "seed"];

/// The index columns of one row of a `games` batch, borrowed.
#[derive(Debug, Clone, Copy)]
pub struct IndexRow<'a> {
    pub game: &'a str,
    pub closed: bool,
    pub last_ts: i64,
    pub commitment: Option<&'a str>,
    pub seed: Option<&'a str>,
}

/// Calls `f` with the row number and index columns of every row of a batch of `games` that
/// holds [`COLUMNS`].
pub fn index_rows(
    b: &RecordBatch,
    mut f: impl FnMut(usize, IndexRow<'_>),
) -> Result<(), arrow::error::ArrowError> {
    let s = b.schema();
    let column = |n: &str| s.index_of(n).map(|i| b.column(i));
    let game = column("game")?.as_string::<i32>();
    let closed = column("closed")?.as_boolean();
    let last = column("last_ts")?.as_primitive::<arrow::datatypes::TimestampMillisecondType>();
    let com = column("commitment")?.as_string::<i32>();
    let seed = column("seed")?.as_string::<i32>();
    for i in 0..b.num_rows() {
        f(
            i,
            IndexRow {
                game: game.value(i),
                closed: closed.value(i),
                last_ts: last.value(i),
                commitment: (!com.is_null(i)).then(|| com.value(i)),
                seed: (!seed.is_null(i)).then(|| seed.value(i)),
            },
        );
    }
    Ok(())
}

/// Calls `f` with every row of the closed `games` files whose game is in `games` or whose
/// commitment or seed is in `keys`.
///
/// Files of open games are skipped: an index never lets an open game go.
/// A file without bloom filters (written before they existed) is read whole.
pub fn matching_rows(
    root: &Path,
    state: &State,
    games: &BTreeSet<String>,
    keys: &BTreeSet<String>,
    stats: &mut RecallStats,
    mut f: impl FnMut(IndexRow<'_>),
) -> Result<(), ReplayError> {
    if games.is_empty() && keys.is_empty() {
        return Ok(());
    }
    for entry in state.table_files("games").filter(|f| !f.open) {
        let path = crate::lake::resolve(root, &entry.path);
        let file = File::open(&path).map_err(super::error::io(&path))?;
        let builder = ParquetRecordBatchReaderBuilder::try_new(file)?;
        stats.files += 1;
        let schema = builder.parquet_schema();
        let col = |name: &str| (0..schema.num_columns()).find(|&i| schema.column(i).name() == name);
        let probes = [
            (col("game"), games),
            (col("commitment"), keys),
            (col("seed"), keys),
        ];
        let mut groups = Vec::new();
        for rg in 0..builder.metadata().num_row_groups() {
            let mut may = false;
            for (c, wanted) in probes {
                if wanted.is_empty() {
                    continue;
                }
                may |= match c.map(|c| builder.get_row_group_column_bloom_filter(rg, c)) {
                    Some(Ok(Some(bloom))) => wanted.iter().any(|v| bloom.check(v.as_str())),
                    _ => true,
                };
                if may {
                    break;
                }
            }
            if may {
                groups.push(rg);
            }
        }
        if groups.is_empty() {
            continue;
        }
        stats.row_groups += groups.len();
        let mask = ProjectionMask::columns(builder.parquet_schema(), COLUMNS);
        let reader = builder
            .with_projection(mask)
            .with_row_groups(groups)
            .build()?;
        for b in reader {
            index_rows(&b?, |_, r| {
                let hit = games.contains(r.game)
                    || r.commitment.is_some_and(|c| keys.contains(c))
                    || r.seed.is_some_and(|s| keys.contains(s));
                if hit {
                    f(r);
                }
            })?;
        }
    }
    Ok(())
}

/// Puts back into `index` the games of the lake a run needs: those of `touched` it does not
/// hold, and every game sharing a seed or commitment with `keys` or with a game put back
/// (to a fixed point, so that every game the run replays finds all its partners).
///
/// Does nothing for a complete index.
pub fn recall(
    root: &Path,
    state: &State,
    index: &mut GameIndex,
    touched: &BTreeSet<String>,
    keys: impl IntoIterator<Item = String>,
) -> Result<RecallStats, ReplayError> {
    let mut stats = RecallStats::default();
    if !index.is_partial() {
        return Ok(stats);
    }
    let mut games: BTreeSet<String> = touched
        .iter()
        .filter(|g| !index.contains(g))
        .cloned()
        .collect();
    let mut keys: BTreeSet<String> = keys.into_iter().collect();
    let mut asked: BTreeSet<String> = BTreeSet::new();
    while !games.is_empty() || !keys.is_empty() {
        // Keys of the games put back that were never asked: the next round's.
        let mut next: BTreeSet<String> = BTreeSet::new();
        let mut put_back = 0;
        matching_rows(root, state, &games, &keys, &mut stats, |r| {
            if index.contains(r.game) {
                return;
            }
            index.insert(r.game, r.closed, r.last_ts, r.commitment, r.seed);
            put_back += 1;
            for k in [r.commitment, r.seed].into_iter().flatten() {
                if !asked.contains(k) && !keys.contains(k) {
                    next.insert(k.to_string());
                }
            }
        })?;
        stats.games += put_back;
        asked.append(&mut keys);
        keys = next;
        games.clear();
    }
    Ok(stats)
}
