{% macro event_payload_hash(relation_alias=none) -%}
    {#-
        A 64-bit hash (Spark's xxhash64, seed 42: the same in every process and build) of an event's
        payload, the columns two copies of one event_id must share to be an exact duplicate:
        merchant_id, currency, event_type, amount (as money_type(), so a landed decimal(38,18) and a
        stored decimal(18,4) of one value hash alike) and event_time. A SQL expression over the
        columns of `relation_alias` (a table or CTE alias; bare column names when none).
        Equal payloads always hash alike; two different payloads hash alike with probability 2^-64,
        and would then be labelled an exact instead of a conflicting duplicate (rejected either way).
    -#}
    {%- set prefix = relation_alias ~ '.' if relation_alias else '' -%}
    xxhash64({{ prefix }}merchant_id, {{ prefix }}currency, {{ prefix }}event_type, cast({{ prefix }}amount as {{ money_type() }}), {{ prefix }}event_time)
{%- endmacro %}
