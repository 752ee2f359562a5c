{#-
    Overrides dbt-spark's seed reset (written against dbt-spark 1.11.0, whose macro drops the old table
    and creates it again): an existing Delta seed table is replaced in one commit with
    `create or replace table`, never dropped. A drop deletes the table's folder file by file; a
    build killed during it left files without a transaction log, and every later `create table`
    there failed (DELTA_CREATE_TABLE_WITH_NON_EMPTY_LOCATION). Other formats keep dbt-spark's reset.
-#}
{% macro spark__reset_csv_table(model, full_refresh, old_relation, agate_table) %}
    {%- if not (old_relation and old_relation.is_delta) -%}
        {{ return(dbt.spark__reset_csv_table(model, full_refresh, old_relation, agate_table)) }}
    {%- endif -%}
    {%- set column_override = model['config'].get('column_types', {}) -%}
    {%- set quote_seed_column = model['config'].get('quote_columns', None) -%}
    {%- set columns = [] -%}
    {%- for col_name in agate_table.column_names -%}
        {%- set type = column_override.get(col_name, adapter.convert_type(agate_table, loop.index0)) -%}
        {%- do columns.append(adapter.quote_seed_column(col_name | string, quote_seed_column) ~ " " ~ type) -%}
    {%- endfor -%}
    {%- set sql -%}
        create or replace table {{ this.render() }} ({{ columns | join(", ") }})
        {{ file_format_clause() }}
        {{ partition_cols(label="partitioned by") }}
        {{ clustered_cols(label="clustered by") }}
        {{ location_clause() }}
        {{ comment_clause() }}
    {%- endset -%}
    {%- call statement('_') -%}
        {{ sql }}
    {%- endcall -%}
    {{ return(sql) }}
{% endmacro %}
