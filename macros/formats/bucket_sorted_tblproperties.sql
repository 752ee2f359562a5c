{% macro bucket_sorted_tblproperties() -%}
    {#-
        Table properties that keep a write's order within each file and cut its Parquet row groups
        small (128 KiB), so that min/max statistics of a sorted column prune within a file: for the
        config of tables whose query ends with a `sort by` a reader filters on (the classification,
        sorted by day and reconciliation_bucket). They apply when dbt creates the table; a table
        created before keeps its layout, and reads stay correct, only unpruned.
    -#}
    {{- return(format_variant('bucket_sorted_tblproperties')()) -}}
{%- endmacro %}


{% macro delta__bucket_sorted_tblproperties() -%}
    {#- Delta writes the query's order when it starts with the partition columns (its writer adds
        a sort only when it does not); the table's configuration is the writer's Hadoop
        configuration, so parquet-mr reads `parquet.block.size` from it. -#}
    {{- return({'parquet.block.size': '131072'}) -}}
{%- endmacro %}


{% macro iceberg__bucket_sorted_tblproperties() -%}
    {#- Without a distribution mode, Iceberg shuffles the rows by partition before it writes,
        which loses the query's order within a day. -#}
    {{- return({
        'write.distribution-mode': 'none',
        'write.parquet.row-group-size-bytes': '131072',
    }) -}}
{%- endmacro %}
