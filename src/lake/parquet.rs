//! Writing lake data files: zstd-compressed Parquet with statistics (not on long audit texts), sorted-column metadata and bloom filters; plain string types in the footers of files polars wrote.

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

/// False-positive rate of the bloom filters on lookup keys.
pub const BLOOM_FPP: f64 = 1e-4;

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
        // A reader tests a few hundred keys against each row group (the games a streaming replay
        // touches): at the default 5 % false positives every row group would match one of them.
        // Filters are folded to the row group's distinct values, so this stays small.
        b = b
            .set_column_bloom_filter_enabled(ColumnPath::from(*c), true)
            .set_column_bloom_filter_fpp(ColumnPath::from(*c), BLOOM_FPP);
    }
    for c in table.no_dictionary {
        b = b.set_column_dictionary_enabled(ColumnPath::from(*c), false);
    }
    for c in table.no_statistics {
        b = b.set_column_statistics_enabled(ColumnPath::from(*c), EnabledStatistics::None);
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

/// What the manifest records of a sorted batch about to be written: key range and latest `ts`.
pub fn batch_meta(table: &TableDef, batch: &RecordBatch) -> super::FileMeta {
    use arrow::array::{Array, AsArray};
    use arrow::datatypes::TimestampMillisecondType;
    let mut meta = super::FileMeta {
        rows: batch.num_rows() as u64,
        ..super::FileMeta::default()
    };
    if batch.num_rows() == 0 {
        return meta;
    }
    if let Some(col) = table.sort_by.first().and_then(|k| batch.column_by_name(k))
        && let Some(s) = col.as_string_opt::<i32>()
    {
        meta.min_key = (!s.is_null(0)).then(|| s.value(0).to_string());
        let last = s.len() - 1;
        meta.max_key = (!s.is_null(last)).then(|| s.value(last).to_string());
    }
    if let Some(ts) = batch
        .column_by_name("ts")
        .and_then(|c| c.as_primitive_opt::<TimestampMillisecondType>())
    {
        meta.max_ts = arrow::compute::max(ts);
        meta.ts_nulls = Some(ts.null_count() as u64);
    }
    meta
}

/// Whether two schemas have the same columns (names and types) in the same order.
fn same_columns(a: &SchemaRef, b: &SchemaRef) -> bool {
    a.fields().len() == b.fields().len()
        && a.fields()
            .iter()
            .zip(b.fields())
            .all(|(x, y)| x.name() == y.name() && x.data_type() == y.data_type())
}

/// `batch` in the columns of `schema`, taken by name. A column the batch lacks is all nulls when
/// the schema allows it (the rows of a file written before the column was added: a table's
/// schema only grows by nullable columns); a column that is missing and not nullable, or of
/// another type, is an error naming it.
pub fn conform(batch: &RecordBatch, schema: &SchemaRef) -> Result<RecordBatch> {
    use arrow::error::ArrowError;
    let have = batch.schema();
    let columns = schema
        .fields()
        .iter()
        .map(|field| match have.index_of(field.name()) {
            Ok(i) if have.field(i).data_type() == field.data_type() => Ok(batch.column(i).clone()),
            Ok(i) => Err(ArrowError::SchemaError(format!(
                "column {} is {} in the rows read, {} in the table",
                field.name(),
                have.field(i).data_type(),
                field.data_type()
            ))),
            Err(_) if field.is_nullable() => Ok(arrow::array::new_null_array(
                field.data_type(),
                batch.num_rows(),
            )),
            Err(_) => Err(ArrowError::SchemaError(format!(
                "column {} is missing from the rows read and may not be null",
                field.name()
            ))),
        })
        .collect::<std::result::Result<Vec<_>, ArrowError>>()?;
    let options = arrow::array::RecordBatchOptions::new().with_row_count(Some(batch.num_rows()));
    Ok(RecordBatch::try_new_with_options(
        schema.clone(),
        columns,
        &options,
    )?)
}

/// Writes the rows of `batches` sorted by the table's keys to `path`, one row
/// group at a time, and returns what the manifest records of the file.
///
/// Only the key columns are sorted together; each row group is then gathered
/// from the inputs, so the inputs and one row group are in memory, not a
/// merged copy and a sorted copy (compaction merges files of tens of MB).
pub fn write_sorted(
    path: &Path,
    table: &TableDef,
    schema: SchemaRef,
    batches: &[RecordBatch],
) -> Result<super::FileMeta> {
    write_sorted_in(path, table, schema, batches, ROW_GROUP_ROWS)
}

fn write_sorted_in(
    path: &Path,
    table: &TableDef,
    schema: SchemaRef,
    batches: &[RecordBatch],
    group_rows: usize,
) -> Result<super::FileMeta> {
    use arrow::compute::{SortColumn, concat, interleave_record_batch, lexsort_to_indices};
    // Rows read back from files written before a column was added (a rewrite, a compaction).
    let conformed: Vec<RecordBatch>;
    let batches = if batches.iter().all(|b| same_columns(&b.schema(), &schema)) {
        batches
    } else {
        conformed = batches
            .iter()
            .map(|b| conform(b, &schema))
            .collect::<Result<_>>()?;
        &conformed
    };
    let mut rows: Vec<(usize, usize)> = batches
        .iter()
        .enumerate()
        .flat_map(|(b, batch)| (0..batch.num_rows()).map(move |r| (b, r)))
        .collect();
    if rows.len() > 1 && !table.sort_by.is_empty() {
        let keys = table
            .sort_by
            .iter()
            .map(|name| {
                let columns = batches
                    .iter()
                    .map(|b| Ok(b.column(b.schema().index_of(name)?).as_ref()))
                    .collect::<std::result::Result<Vec<_>, arrow::error::ArrowError>>()?;
                Ok(SortColumn {
                    values: concat(&columns)?,
                    options: None,
                })
            })
            .collect::<std::result::Result<Vec<_>, arrow::error::ArrowError>>()?;
        let order = lexsort_to_indices(&keys, None)?;
        rows = order.values().iter().map(|&i| rows[i as usize]).collect();
    }
    let inputs: Vec<&RecordBatch> = batches.iter().collect();
    let file = File::create(path).at(path)?;
    let props = properties(table, &schema);
    let mut w = ArrowWriter::try_new(file, Arc::clone(&schema), Some(props))?;
    let mut meta = super::FileMeta {
        rows: rows.len() as u64,
        ..super::FileMeta::default()
    };
    for (k, chunk) in rows.chunks(group_rows.max(1)).enumerate() {
        let group = interleave_record_batch(&inputs, chunk)?;
        let m = batch_meta(table, &group);
        if k == 0 {
            meta.min_key = m.min_key;
        }
        meta.max_key = m.max_key;
        meta.max_ts = meta.max_ts.max(m.max_ts);
        if let Some(n) = m.ts_nulls {
            meta.ts_nulls = Some(meta.ts_nulls.unwrap_or(0) + n);
        }
        w.write(&group)?;
    }
    w.close()?;
    meta.bytes = std::fs::metadata(path).at(path)?.len();
    Ok(meta)
}

/// Sorts a batch by the given columns, ascending.
pub fn sort_batch(
    batch: &RecordBatch,
    by: &[&str],
) -> Result<RecordBatch, arrow::error::ArrowError> {
    use arrow::compute::{SortColumn, lexsort_to_indices, take_record_batch};
    if batch.num_rows() <= 1 || by.is_empty() {
        return Ok(batch.clone());
    }
    let keys: Vec<SortColumn> = by
        .iter()
        .map(|name| {
            let i = batch.schema().index_of(name)?;
            Ok(SortColumn {
                values: Arc::clone(batch.column(i)),
                options: None,
            })
        })
        .collect::<Result<_, arrow::error::ArrowError>>()?;
    let idx = lexsort_to_indices(&keys, None)?;
    take_record_batch(batch, &idx)
}

/// Reads a whole Parquet file (optionally only some columns) into record batches.
pub fn read_file(path: &Path, columns: Option<&[&str]>) -> Result<Vec<RecordBatch>> {
    use parquet::arrow::ProjectionMask;
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    let file = File::open(path).at(path)?;
    let mut builder = ParquetRecordBatchReaderBuilder::try_new(file)?;
    if let Some(cols) = columns {
        let mask = ProjectionMask::columns(builder.parquet_schema(), cols.iter().copied());
        builder = builder.with_projection(mask);
    }
    let reader = builder.with_batch_size(16 * 1024).build()?;
    let mut out = Vec::new();
    for b in reader {
        out.push(b?);
    }
    Ok(out)
}

/// Rewrites the footer of a Parquet file written by another writer (polars) so that the Arrow
/// schema it embeds declares `string` and `binary` where that writer declared `string_view` and
/// `binary_view`: the data pages are the same either way (UTF-8 byte arrays), and the Delta schema
/// says `string`, but pyarrow's datasets could not filter a view column (`equal` has no kernel for
/// `string` against `string_view`), so `deltalake`'s pyarrow route failed on any text filter over
/// the feature tables. Only the footer is written again; the file's new length is returned.
pub fn plain_strings_in_footer(path: &Path) -> Result<u64> {
    use std::io::{Read, Seek, SeekFrom, Write};

    use arrow::datatypes::{DataType, Field, Schema};
    use parquet::arrow::{ARROW_SCHEMA_META_KEY, encode_arrow_schema, parquet_to_arrow_schema};
    use parquet::file::metadata::{
        FileMetaData, KeyValue, ParquetMetaDataBuilder, ParquetMetaDataReader,
        ParquetMetaDataWriter,
    };

    fn plain(dt: &DataType) -> DataType {
        let field =
            |f: &Arc<Field>| Arc::new(f.as_ref().clone().with_data_type(plain(f.data_type())));
        match dt {
            DataType::Utf8View => DataType::Utf8,
            DataType::BinaryView => DataType::Binary,
            DataType::List(f) => DataType::List(field(f)),
            DataType::LargeList(f) => DataType::LargeList(field(f)),
            DataType::Struct(fs) => DataType::Struct(fs.iter().map(field).collect()),
            other => other.clone(),
        }
    }

    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .at(path)?;
    let len = file.metadata().at(path)?.len();
    let metadata = ParquetMetaDataReader::new().parse_and_finish(&file)?;
    let meta = metadata.file_metadata();
    let Some(kv) = meta.key_value_metadata() else {
        return Ok(len);
    };
    if !kv.iter().any(|k| k.key == ARROW_SCHEMA_META_KEY) {
        return Ok(len);
    }
    let schema = parquet_to_arrow_schema(meta.schema_descr(), Some(kv))?;
    let fields: Vec<Arc<Field>> = schema
        .fields()
        .iter()
        .map(|f| Arc::new(f.as_ref().clone().with_data_type(plain(f.data_type()))))
        .collect();
    let plain_schema = Schema::new_with_metadata(fields, schema.metadata().clone());
    if plain_schema == schema {
        return Ok(len);
    }
    let encoded = encode_arrow_schema(&plain_schema);
    let kv: Vec<KeyValue> = kv
        .iter()
        .map(|k| {
            if k.key == ARROW_SCHEMA_META_KEY {
                KeyValue::new(k.key.clone(), encoded.clone())
            } else {
                k.clone()
            }
        })
        .collect();
    let footer = FileMetaData::new(
        meta.version(),
        meta.num_rows(),
        meta.created_by().map(str::to_owned),
        Some(kv),
        meta.schema_descr_ptr(),
        meta.column_orders().cloned(),
    );
    let mut from = ParquetMetaDataBuilder::new_from_metadata(metadata);
    let row_groups = from.take_row_groups();
    let metadata = ParquetMetaDataBuilder::new(footer)
        .set_row_groups(row_groups)
        .set_column_index(from.take_column_index())
        .set_offset_index(from.take_offset_index())
        .build();
    // The footer starts where its length (the 4 bytes before the closing magic) says.
    let mut tail = [0u8; 8];
    file.seek(SeekFrom::End(-8)).at(path)?;
    file.read_exact(&mut tail).at(path)?;
    let footer_len = u64::from(u32::from_le_bytes([tail[0], tail[1], tail[2], tail[3]]));
    let start = len.checked_sub(8 + footer_len).ok_or_else(|| {
        parquet::errors::ParquetError::General("footer longer than the file".into())
    })?;
    file.set_len(start).at(path)?;
    file.seek(SeekFrom::Start(start)).at(path)?;
    let mut out = std::io::BufWriter::new(&mut file);
    ParquetMetaDataWriter::new(&mut out, &metadata).finish()?;
    out.flush().at(path)?;
    drop(out);
    Ok(file.metadata().at(path)?.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lake::record::Ts;

    crate::row_table! {
        /// A small table sorted by game and seq, as the lake's tables are.
        pub struct FindingRow in "test_rows" (partition None, sort ["game", "seq"], bloom ["game"]) {
            /// Game id.
            game: String,
            /// Seq.
            seq: i64,
            /// Time.
            ts: Option<Ts>,
            /// Text.
            message: String,
        }
    }

    fn finding(game: &str, seq: i64) -> FindingRow {
        FindingRow {
            game: game.into(),
            seq,
            ts: Some(Ts(seq * 1000)),
            message: format!("{game}:{seq}"),
        }
    }

    #[test]
    fn write_sorted_equals_sorting_the_concatenation() {
        let def = FindingRow::def();
        let batches: Vec<RecordBatch> = [
            vec![finding("g2", 5), finding("g1", 9), finding("g3", 1)],
            vec![finding("g1", 2), finding("g2", 1)],
            vec![finding("g0", 7), finding("g1", 4), finding("g2", 3)],
            vec![FindingRow {
                ts: None,
                ..finding("g4", 2)
            }],
        ]
        .iter()
        .map(|rows| FindingRow::to_batch(rows).unwrap())
        .collect();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.parquet");
        // Row groups of 3 rows: the output is gathered in three groups.
        let meta = write_sorted_in(&path, &def, def.schema(), &batches, 3).unwrap();
        let merged = arrow::compute::concat_batches(&def.schema(), &batches).unwrap();
        let expected = sort_batch(&merged, def.sort_by).unwrap();
        let read = read_file(&path, None).unwrap();
        let got = arrow::compute::concat_batches(&read[0].schema(), &read).unwrap();
        assert_eq!(got.num_rows(), 9);
        assert_eq!(got.columns(), expected.columns());
        assert_eq!(meta.rows, 9);
        assert_eq!(meta.min_key.as_deref(), Some("g0"));
        assert_eq!(meta.max_key.as_deref(), Some("g4"));
        assert_eq!(meta.max_ts, Some(9000));
        // Counted over the row groups: the one row without a time is in the last.
        assert_eq!(meta.ts_nulls, Some(1));
        assert_eq!(meta.bytes, std::fs::metadata(&path).unwrap().len());
    }

    #[test]
    fn rows_from_before_a_column_was_added_are_written_with_it_null() {
        let def = FindingRow::def();
        // The rows of `rows` without the column `name`.
        let without = |rows: &[FindingRow], name: &str| {
            let b = FindingRow::to_batch(rows).unwrap();
            let keep: Vec<usize> = (0..b.num_columns())
                .filter(|&i| b.schema().field(i).name() != name)
                .collect();
            b.project(&keep).unwrap()
        };
        let new = FindingRow::to_batch(&[finding("g2", 1)]).unwrap();
        // A file written before the nullable `ts` existed.
        let old = without(&[finding("g1", 4)], "ts");
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.parquet");
        let meta = write_sorted(&path, &def, def.schema(), &[new, old]).unwrap();
        assert_eq!((meta.rows, meta.ts_nulls), (2, Some(1)));
        let read = read_file(&path, None).unwrap();
        let got = arrow::compute::concat_batches(&def.schema(), &read).unwrap();
        let ts = got.column(got.schema().index_of("ts").unwrap());
        // Sorted by game: g1 (the old row, no time) first.
        assert!(ts.is_null(0) && ts.is_valid(1));
        // A column that may not be null cannot be missing.
        let err = write_sorted(
            &path,
            &def,
            def.schema(),
            &[without(&[finding("g3", 1)], "message")],
        )
        .unwrap_err();
        assert!(
            err.to_string().contains("column message is missing"),
            "{err}"
        );
    }
}
