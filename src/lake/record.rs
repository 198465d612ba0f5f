//! Typed rows for derived tables: one declaration gives the Rust struct, the table definition and the Arrow conversion.

use std::sync::Arc;

use arrow::array::{
    ArrayBuilder, ArrayRef, BooleanBuilder, Float64Builder, Int64Builder, ListBuilder,
    StringBuilder, TimestampMillisecondBuilder,
};
use arrow::datatypes::{DataType, Field};

/// A timestamp in epoch milliseconds (UTC), stored as `Timestamp(ms, "UTC")`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, serde::Serialize)]
pub struct Ts(pub i64);

/// A Rust value that is one cell of an Arrow column.
pub trait Cell {
    type Builder: ArrayBuilder;
    fn data_type() -> DataType;
    fn nullable() -> bool {
        false
    }
    fn builder() -> Self::Builder;
    fn append(&self, b: &mut Self::Builder);
    /// Finishes a builder into an array of the declared type.
    fn finish(b: &mut Self::Builder) -> ArrayRef;
}

macro_rules! plain_cell {
    ($t:ty, $b:ty, $dt:expr, |$s:ident, $bb:ident| $append:expr) => {
        impl Cell for $t {
            type Builder = $b;
            fn data_type() -> DataType {
                $dt
            }
            fn builder() -> $b {
                <$b>::new()
            }
            fn append(&self, $bb: &mut $b) {
                let $s = self;
                $append
            }
            fn finish(b: &mut $b) -> ArrayRef {
                Arc::new(b.finish())
            }
        }
        impl Cell for Option<$t> {
            type Builder = $b;
            fn data_type() -> DataType {
                $dt
            }
            fn nullable() -> bool {
                true
            }
            fn builder() -> $b {
                <$b>::new()
            }
            fn append(&self, $bb: &mut $b) {
                match self {
                    Some($s) => $append,
                    None => $bb.append_null(),
                }
            }
            fn finish(b: &mut $b) -> ArrayRef {
                Arc::new(b.finish())
            }
        }
    };
}

plain_cell!(String, StringBuilder, DataType::Utf8, |s, b| b
    .append_value(s));
plain_cell!(i64, Int64Builder, DataType::Int64, |s, b| b
    .append_value(*s));
plain_cell!(f64, Float64Builder, DataType::Float64, |s, b| b
    .append_value(*s));
plain_cell!(bool, BooleanBuilder, DataType::Boolean, |s, b| b
    .append_value(*s));

fn ts_type() -> DataType {
    super::tables::ts_type()
}

impl Cell for Ts {
    type Builder = TimestampMillisecondBuilder;
    fn data_type() -> DataType {
        ts_type()
    }
    fn builder() -> TimestampMillisecondBuilder {
        TimestampMillisecondBuilder::new().with_timezone("UTC")
    }
    fn append(&self, b: &mut TimestampMillisecondBuilder) {
        b.append_value(self.0);
    }
    fn finish(b: &mut TimestampMillisecondBuilder) -> ArrayRef {
        Arc::new(b.finish())
    }
}

impl Cell for Option<Ts> {
    type Builder = TimestampMillisecondBuilder;
    fn data_type() -> DataType {
        ts_type()
    }
    fn nullable() -> bool {
        true
    }
    fn builder() -> TimestampMillisecondBuilder {
        TimestampMillisecondBuilder::new().with_timezone("UTC")
    }
    fn append(&self, b: &mut TimestampMillisecondBuilder) {
        b.append_option(self.map(|t| t.0));
    }
    fn finish(b: &mut TimestampMillisecondBuilder) -> ArrayRef {
        Arc::new(b.finish())
    }
}

impl Cell for Vec<String> {
    type Builder = ListBuilder<StringBuilder>;
    fn data_type() -> DataType {
        DataType::List(Arc::new(Field::new("item", DataType::Utf8, true)))
    }
    fn builder() -> ListBuilder<StringBuilder> {
        ListBuilder::new(StringBuilder::new())
    }
    fn append(&self, b: &mut ListBuilder<StringBuilder>) {
        for s in self {
            b.values().append_value(s);
        }
        b.append(true);
    }
    fn finish(b: &mut ListBuilder<StringBuilder>) -> ArrayRef {
        Arc::new(b.finish())
    }
}

/// A nullable list cell: null, or the list of its non-nullable form.
impl<T, B> Cell for Option<Vec<T>>
where
    Vec<T>: Cell<Builder = ListBuilder<B>>,
    B: ArrayBuilder,
{
    type Builder = ListBuilder<B>;
    fn data_type() -> DataType {
        <Vec<T> as Cell>::data_type()
    }
    fn nullable() -> bool {
        true
    }
    fn builder() -> ListBuilder<B> {
        <Vec<T> as Cell>::builder()
    }
    fn append(&self, b: &mut ListBuilder<B>) {
        match self {
            Some(v) => v.append(b),
            None => b.append(false),
        }
    }
    fn finish(b: &mut ListBuilder<B>) -> ArrayRef {
        <Vec<T> as Cell>::finish(b)
    }
}

/// List cells of numbers (`Vec<i64>`, `Vec<f64>`; their nullable forms are the generic `Option<Vec<T>>`).
macro_rules! number_list_cell {
    ($t:ty, $b:ty, $dt:expr) => {
        impl Cell for Vec<$t> {
            type Builder = ListBuilder<$b>;
            fn data_type() -> DataType {
                DataType::List(Arc::new(Field::new("item", $dt, true)))
            }
            fn builder() -> ListBuilder<$b> {
                ListBuilder::new(<$b>::new())
            }
            fn append(&self, b: &mut ListBuilder<$b>) {
                b.values().append_slice(self);
                b.append(true);
            }
            fn finish(b: &mut ListBuilder<$b>) -> ArrayRef {
                Arc::new(b.finish())
            }
        }
    };
}

number_list_cell!(i64, Int64Builder, DataType::Int64);
number_list_cell!(f64, Float64Builder, DataType::Float64);

/// Declares a derived table's row type.
///
/// ```ignore
/// row_table! {
///     /// Doc of the table.
///     pub struct MoveRow in "moves" (partition "date", sort ["game", "seq"], bloom ["game"]) {
///         /// Doc of the column.
///         game: String,
///     }
/// }
/// ```
#[macro_export]
macro_rules! row_table {
    (
        #[doc = $tdoc:literal]
        pub struct $name:ident in $table:literal (partition $part:expr, sort [$($sort:literal),*], bloom [$($bloom:literal),*]) {
            $( #[doc = $cdoc:literal] $field:ident : $ty:ty ),+ $(,)?
        }
    ) => {
        #[doc = $tdoc]
        #[derive(Debug, Clone, PartialEq, serde::Serialize)]
        pub struct $name { $( #[doc = $cdoc] pub $field: $ty ),+ }

        impl $name {
            /// The table definition (catalogue entry).
            pub fn def() -> $crate::lake::tables::TableDef {
                $crate::lake::tables::TableDef {
                    name: $table,
                    doc: $tdoc.trim(),
                    partition: $part,
                    columns: vec![$($crate::lake::tables::Column {
                        name: stringify!($field),
                        ty: <$ty as $crate::lake::record::Cell>::data_type(),
                        nullable: <$ty as $crate::lake::record::Cell>::nullable(),
                        doc: $cdoc.trim(),
                    }),+],
                    sort_by: &[$($sort),*],
                    bloom: &[$($bloom),*],
                    no_dictionary: &[],
                    no_statistics: &[],
                }
            }

            /// Rows to one record batch (in the given order).
            pub fn to_batch(rows: &[$name]) -> Result<arrow::array::RecordBatch, arrow::error::ArrowError> {
                #[allow(non_snake_case)]
                struct B { $( $field: <$ty as $crate::lake::record::Cell>::Builder ),+ }
                let mut b = B { $( $field: <$ty as $crate::lake::record::Cell>::builder() ),+ };
                for r in rows {
                    $( $crate::lake::record::Cell::append(&r.$field, &mut b.$field); )+
                }
                let cols: Vec<arrow::array::ArrayRef> =
                    vec![$( <$ty as $crate::lake::record::Cell>::finish(&mut b.$field) ),+];
                arrow::array::RecordBatch::try_new(Self::def().schema(), cols)
            }
        }
    };
}

#[cfg(test)]
mod tests {
    use super::Ts;

    crate::row_table! {
        /// A test table.
        pub struct TestRow in "test_rows" (partition Some("date"), sort ["k"], bloom ["k"]) {
            /// Key.
            k: String,
            /// Maybe a number.
            n: Option<i64>,
            /// When.
            at: Ts,
            /// Tags.
            tags: Vec<String>,
        }
    }

    #[test]
    fn rows_become_a_batch_of_the_declared_schema() {
        let rows = vec![
            TestRow {
                k: "a".into(),
                n: Some(1),
                at: Ts(5),
                tags: vec!["x".into()],
            },
            TestRow {
                k: "b".into(),
                n: None,
                at: Ts(6),
                tags: vec![],
            },
        ];
        let b = TestRow::to_batch(&rows).unwrap();
        assert_eq!(b.num_rows(), 2);
        assert_eq!(b.schema(), TestRow::def().schema());
        assert_eq!(TestRow::def().columns[1].doc, "Maybe a number.");
        assert!(TestRow::def().columns[1].nullable);
    }
}
