{% macro current_table_version(relation) -%}
    {#-
        The version a reader of `relation` sees now, as an integer, for `VERSION AS OF`: Delta's
        table version (the latest of `describe history`), Iceberg's current snapshot id (the `main`
        branch of its `refs` metadata table). none when the table has no version yet.
    -#}
    {%- if table_format() == 'iceberg' -%}
        {%- set found = run_query("select snapshot_id from " ~ relation ~ ".refs where name = 'main'") -%}
        {%- set column = 'snapshot_id' -%}
    {%- else -%}
        {%- set found = run_query("describe history " ~ relation ~ " limit 1") -%}
        {%- set column = 'version' -%}
    {%- endif -%}
    {{- return(found.columns[column].values()[0] | int if found.rows | length > 0 else none) -}}
{%- endmacro %}
