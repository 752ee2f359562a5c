{% macro dedup_index_predicate(unit_base, units) -%}
    {#-
        Which partitions of the dedup index (int_payment_event_ids) a batch's lookup reads: a SQL
        predicate on `id_unit`, valid on its own. `unit_base` is the base of the ranged units the
        directory (int_payment_event_id_units) lists, 0 or none when it lists none; `units` the
        `id_unit`s of that base the batch's event ids fall in (dedup_index_units_query).
        Reads those units, and every partition the directory does not list: the appended rows
        (`id_unit` -1) and the units of any other base (an index ranged again after the directory
        was written), so a stale or missing directory costs bytes, never a missed duplicate.
        `true` when the directory lists nothing. Raises a compiler error unless `unit_base` and
        every unit are whole numbers.
    -#}
    {%- if not unit_base -%}
        {{- return('true') -}}
    {%- endif -%}
    {%- for value in [unit_base] + (units | list) if value is not number or value is boolean or value != (value | int) -%}
        {{ exceptions.raise_compiler_error("dedup_index_predicate: unit bases and units are whole numbers, got " ~ (value | string | tojson)) }}
    {%- endfor -%}
    {%- set first = (unit_base | int) * _dedup_units_per_base() -%}
    {%- set others = 'id_unit < ' ~ first ~ ' or id_unit >= ' ~ (first + _dedup_units_per_base()) -%}
    {%- if units | length == 0 -%}
        {{- return(others) -}}
    {%- endif -%}
    {{- return('id_unit in (' ~ (units | map('int') | map('string') | sort | join(', ')) ~ ') or ' ~ others) -}}
{%- endmacro %}


{#-
    Private. The id_unit numbers of one base: unit_base * 10^9 up to (unit_base + 1) * 10^9 - 1,
    task * 10^5 + the task's unit (int_payment_event_ids). unit_base is an epoch second, so the
    largest id_unit (about 1.8 * 10^18 today) fits a bigint until the year 2262.
-#}
{% macro _dedup_units_per_base() -%}
    {{- return(1000000000) -}}
{%- endmacro %}
