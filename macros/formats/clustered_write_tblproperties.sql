{% macro clustered_write_tblproperties() -%}
    {#-
        Table properties of a partitioned table whose query already places each partition's rows
        together in one task (the dedup index: a range of event ids per task, its units one after
        another): the write takes the rows as they come, with one file open per task, instead of
        shuffling them by partition or keeping a file open for every partition a task meets. They
        apply when dbt creates the table (a full refresh too).
    -#}
    {{- return(format_variant('clustered_write_tblproperties')()) -}}
{%- endmacro %}


{% macro delta__clustered_write_tblproperties() -%}
    {#- None: Spark's file writer, which Delta's is, sorts a task's rows by the partition columns
        (grouped by unit already) and keeps one file open at a time. -#}
    {{- return(none) -}}
{%- endmacro %}


{% macro iceberg__clustered_write_tblproperties() -%}
    {#- Iceberg's defaults would shuffle the rows by partition (`write.distribution-mode` hash on
        a partitioned table) and then write them with its fanout writer, one open Parquet writer
        per partition in each task (`write.spark.fanout.enabled`, on by default for a table
        without a sort order: SparkWriteConf.fanoutWriterEnabled and SparkWriteUtil.writeOrdering
        in Iceberg 1.10). A full build of the dedup index on 30M events (about 6,000 units of
        5,000 ids, shuffled into a few tasks) ran out of a 6 GB driver's heap in those writers'
        Parquet dictionaries. With these, each range task's rows stay where they are, Spark sorts
        them by partition (grouped so already) and Iceberg's clustered writer writes one file at a
        time. -#}
    {{- return({
        'write.distribution-mode': 'none',
        'write.spark.fanout.enabled': 'false',
    }) -}}
{%- endmacro %}
