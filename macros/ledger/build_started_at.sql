{% macro build_started_at() -%}
    {#-
        The start of this dbt invocation (run_started_at, UTC) as a timestamp literal: the time the
        rows a build writes are stamped with. Not current_timestamp(): Delta's MERGE replaces that
        call with a literal in the plan of its source, which then no longer matches the cached new
        rows (dbt_spark_get_incremental_sql), so the MERGE computes its source again from the
        tables it reads.
    -#}
    cast('{{ run_started_at.strftime("%Y-%m-%d %H:%M:%S.%f") }}' as timestamp)
{%- endmacro %}
