{% macro identifier_pattern(kind) -%}
    {#-
        The regular expression a whole `kind` identifier (merchant_id, segment, currency,
        invocation_id) must match: the var `identifier_patterns` of dbt_project.yml, the one
        definition Python reads too. Raises a compiler error for a kind it does not list.
    -#}
    {%- set patterns = var('identifier_patterns') -%}
    {%- if kind not in patterns -%}
        {{ exceptions.raise_compiler_error("no identifier pattern for " ~ kind ~ "; identifier_patterns lists " ~ patterns.keys() | list | join(', ')) }}
    {%- endif -%}
    {{- return(patterns[kind]) -}}
{%- endmacro %}
