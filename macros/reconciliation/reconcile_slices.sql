{% macro reconcile_slices() -%}
    {#-
        N, the number of slices the keys are reconciled in (var `reconcile_slices`, default 24): a
        scheduled build compares one slice, so every key is compared at least once every N builds.
        Raises a compiler error unless it is a whole number from 1 to 4096.
    -#}
    {%- set slices = var('reconcile_slices', 24) -%}
    {%- if slices is not number or slices is boolean or slices != (slices | int) or slices < 1 or slices > 4096 -%}
        {{ exceptions.raise_compiler_error("var reconcile_slices must be a whole number from 1 to 4096, got " ~ (slices | string | tojson)) }}
    {%- endif -%}
    {{ return(slices | int) }}
{%- endmacro %}
