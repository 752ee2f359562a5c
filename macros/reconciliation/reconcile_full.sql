{% macro reconcile_full() -%}
    {#-
        Whether this invocation checks every key and every row (var `reconcile_full`, default
        false): the nightly job, CI, `payledger reconcile --full`. Raises a compiler error unless it
        is true or false.
    -#}
    {%- set full = var('reconcile_full', false) -%}
    {%- if full is not boolean -%}
        {{ exceptions.raise_compiler_error("var reconcile_full must be true or false, got " ~ (full | string | tojson)) }}
    {%- endif -%}
    {{ return(full) }}
{%- endmacro %}
