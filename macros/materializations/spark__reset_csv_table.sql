{#-
    Overrides dbt-spark's seed reset (written against dbt-spark 1.11.0, whose macro drops the old table
    and creates it again):
    - a seed table already loaded from the same file and column types (_seed_is_loaded) is left as
      it is: no statement, no commit (spark__load_csv_rows skips its rows too), unless
      --full-refresh;
    - an existing Delta or Iceberg seed table is replaced in one commit with `create or replace
      table`, never dropped. On Delta a drop deletes the table's folder file by file; a build
      killed during it left files without a transaction log, and every later `create table` there
      failed (DELTA_CREATE_TABLE_WITH_NON_EMPTY_LOCATION). On both, readers never find the seed
      missing and the table keeps its history (an Iceberg table dropped and created is a new table
      with a new UUID). Other formats keep dbt-spark's reset.
-#}
{% macro spark__reset_csv_table(model, full_refresh, old_relation, agate_table) %}
    {%- if not full_refresh and _seed_is_loaded(old_relation, _seed_fingerprint(model)) -%}
        {{ log('seed ' ~ old_relation ~ ' is loaded from this file already; nothing to do', info=false) }}
        {{ return('') }}
    {%- endif -%}
    {%- if not (old_relation and relation_is_any_format(old_relation)) -%}
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
        {#- Not loaded yet: spark__load_csv_rows sets the fingerprint after the rows are in. #}
        tblproperties ('payledger.seed_fingerprint' = 'loading')
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
