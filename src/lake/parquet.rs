//! Writing lake data files: zstd-compressed Parquet with statistics, sorted-column metadata and bloom filters.

use std::fs::File;
use std::path::Path;
use std::sync::Arc;

use arrow::array::RecordBatch;
use arrow::datatypes::SchemaRef;
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::metadata::SortingColumn;
use parquet::file::properties::{EnabledStatistics, WriterProperties};
use parquet::schema::types::ColumnPath;

use super::tables::TableDef;
use super::{IoContext, Result};

/// Rows per row group: small enough that statistics prune well when reading one game.
pub const ROW_GROUP_ROWS: usize = 64 * 1024;

/// Writer properties for a table: zstd, page statistics, the table's sort order, bloom filters on its key.
pub fn properties(table: &TableDef, schema: &SchemaRef) -> WriterProperties {
    let mut b = WriterProperties::builder()
        .set_compression(Compression::ZSTD(ZstdLevel::try_new(1).unwrap_or_default()))
        .set_statistics_enabled(EnabledStatistics::Page)
        .set_max_row_group_row_count(Some(ROW_GROUP_ROWS))
        .set_created_by(format!("vigie {}", env!("CARGO_PKG_VERSION")));
    let sorting: Vec<SortingColumn> = table
        .sort_by
        .iter()
        .filter_map(|c| schema.index_of(c).ok())
        .map(|i| SortingColumn {
            column_idx: i as i32,
            descending: false,
            nulls_first: false,
        })
        .collect();
    if !sorting.is_empty() {
        b = b.set_sorting_columns(Some(sorting));
    }
    for c in table.bloom {
        b = b.set_column_bloom_filter_enabled(ColumnPath::from(*c), true);
    }
    for c in table.no_dictionary {
        b = b.set_column_dictionary_enabled(ColumnPath::from(*c), false);
    }
    b.build()
}

/// Writes batches (already sorted) to `path` as one Parquet file; returns the file size in bytes.
pub fn write_file(
    path: &Path,
    table: &TableDef,
    schema: SchemaRef,
    batches: &[RecordBatch],
) -> Result<u64> {
    let file = File::create(path).at(path)?;
    let props = properties(table, &schema);
    let mut w = ArrowWriter::try_new(file, Arc::clone(&schema), Some(props))?;
    for b in batches {
        w.write(b)?;
    }
    w.close()?;
    let len = std::fs::metadata(path).at(path)?.len();
    Ok(len)
}
