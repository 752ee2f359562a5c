{{
    config(
        materialized='incremental',
        incremental_strategy='append',
        on_schema_change='fail',
    )
}}

{#-
    The directory of the dedup index's ranged units: per unit, its first and last event id, for
    the lookup of int_payment_events_classified (dedup_index_units_query). Rows are added when the
    index has been ranged again (a full build of int_payment_event_ids, here or by maintenance):
    one row per unit of the new `unit_base`. Lookups use the largest base listed; older bases'
    rows are kept (one per unit: 200 per million ids at the default unit size) and skipped by
    their files' statistics.
    The index's base is read now, not from run_watermarks: the index may have been ranged earlier
    in this invocation.
-#}

{#- A bare max(), as run_watermarks reads the other append-only tables (Delta answers it from
    its log). #}
{%- set index_base = none %}
{%- if execute and load_relation(ref('int_payment_event_ids')) is not none %}
    {%- set index_base = run_query("select max(unit_base) from " ~ ref('int_payment_event_ids')).rows[0][0] %}
{%- endif %}
{%- set is_new_base = index_base is not none and index_base | int > incremental_watermark('unit_base') %}

with ranged_event_ids as (
    select
        id_unit,
        unit_base,
        event_id
    from {{ ref('int_payment_event_ids') }}
    where {{ 'unit_base = ' ~ (index_base | int) if is_new_base else 'false' }}
),

final as (
    select
        id_unit,
        unit_base,
        min(event_id) as first_event_id,
        max(event_id) as last_event_id,
        count(*) as event_ids
    from ranged_event_ids
    group by id_unit, unit_base
)

select * from final
