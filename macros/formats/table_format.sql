{% macro table_format() -%}
    {#-
        'delta' or 'iceberg': the format of every table dbt writes, from the var `table_format`
        (dbt_project.yml decides it from the target). Raises a compiler error for any other value.
    -#}
    {%- set format = var('table_format') | string | trim | lower -%}
    {#- The var, not table_formats(): sqlfluff's templater mis-returns a macro called in a macro. -#}
    {%- set formats = var('table_format_catalogs') -%}
    {%- if format not in formats -%}
        {{ exceptions.raise_compiler_error("var table_format must be one of " ~ formats.keys() | join(', ') ~ ", got " ~ format | tojson) }}
    {%- endif -%}
    {{- return(format) -}}
{%- endmacro %}


{% macro table_formats() -%}
    {#- The formats the project writes: the keys of the var `table_format_catalogs`. -#}
    {{- return(var('table_format_catalogs').keys() | list) -}}
{%- endmacro %}


{% macro format_variant(name, format=none) -%}
    {#-
        The one dispatch of format differences: the macro `<format>__<name>` (format: `format`, or
        table_format() when none), the way dbt's adapter.dispatch picks `<adapter>__<name>`. A
        format without that variant is a compiler error naming the missing macro.
    -#}
    {#- The var as table_format() reads it, not a call: sqlfluff's templater mis-returns a macro
        called in a macro. -#}
    {%- set format = (var('table_format') | string | trim | lower) if format is none else format -%}
    {%- if format not in var('table_format_catalogs') -%}
        {{ exceptions.raise_compiler_error(
            "table format must be one of " ~ var('table_format_catalogs').keys() | join(', ') ~ ", got " ~ format | tojson
        ) }}
    {%- endif -%}
    {%- set variant = context.get(format ~ '__' ~ name) -%}
    {%- if variant is none -%}
        {{ exceptions.raise_compiler_error("No macro " ~ format ~ "__" ~ name ~ ": each table format defines its variant of " ~ name) }}
    {%- endif -%}
    {{- return(variant) -}}
{%- endmacro %}
