{% macro validate_table_format() -%}
    {#-
        on-run-start hook: stops the run when the Spark session's `spark_catalog` is the other
        format's catalog (Iceberg's SparkCatalog for a delta run, Delta's DeltaCatalog for an iceberg
        run): tables would be written in one format into the other's catalog. Catches a Thrift
        Server started in another format than PAYLEDGER_FORMAT says. Any other catalog (a
        platform's own, such as Databricks') is left to the platform. The catalog classes: the var
        `table_format_catalogs`. Renders nothing.
    -#}
    {%- if not execute -%}
        {{ return('') }}
    {%- endif -%}
    {%- set catalogs = var('table_format_catalogs') -%}
    {%- set catalog = session_setting('spark.sql.catalog.spark_catalog') -%}
    {%- for other, class_name in catalogs.items() if other != table_format() and catalog == class_name -%}
        {{ exceptions.raise_compiler_error(
            "Target " ~ target.name ~ " writes " ~ table_format() ~ " tables, but the Spark session's spark_catalog is "
            ~ catalog ~ ", " ~ other ~ "'s catalog. On target thrift, set PAYLEDGER_FORMAT to the format the Thrift "
            ~ "Server was started with (payledger thrift status shows it)."
        ) }}
    {%- endfor -%}
    {{ return('') }}
{%- endmacro %}
