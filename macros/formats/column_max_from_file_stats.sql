{% macro column_max_from_file_stats(relation, column) -%}
    {#-
        max(`column`) of `relation` (a bigint column that only grows, such as a watermark), as an
        integer (0 when the table is empty), read from file statistics where the format offers them:
        - iceberg: the upper bounds of the live data files (`<relation>.data_files`); a scan only if
          some file has no bound. The bounds cover rows deleted by later MERGEs too: exact only for a
          column whose rows are replaced by rows with an equal or greater value.
        - delta: `select max(column)`, which Delta answers from the transaction log's file
          statistics when the table has no deletion vectors, and by a one-column scan otherwise.
    -#}
    {%- if table_format() == 'iceberg' -%}
        {%- set bounds = run_query(
            "select count(*) - count(readable_metrics." ~ column ~ ".upper_bound),"
            ~ " max(readable_metrics." ~ column ~ ".upper_bound) from " ~ relation ~ ".data_files"
        ).rows[0] -%}
        {%- if bounds[0] == 0 -%}
            {{- return(bounds[1] | int if bounds[1] is not none else 0) -}}
        {%- endif -%}
    {%- endif -%}
    {%- set found = run_query("select max(" ~ column ~ ") from " ~ relation).rows[0][0] -%}
    {{- return(found | int if found is not none else 0) -}}
{%- endmacro %}
