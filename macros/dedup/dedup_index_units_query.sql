{% macro dedup_index_units_query(directory, batch_event_ids, unit_base) -%}
    {#-
        A query whose rows (`id_unit`) are the units of the dedup index's ranged part, as the
        directory `directory` (int_payment_event_id_units) lists them for `unit_base`, whose event id
        range [first_event_id, last_event_id] holds one of the event ids of `batch_event_ids` (a
        query or relation with a column `event_id`). The ranges of one base do not overlap (the
        units are consecutive runs of the sorted ids), so each id is placed by one sort of the
        directory's first ids and the batch's ids: the last unit that starts at or before the id,
        if the id is not past that unit's last id. Ids before the first unit or between two units
        match none: they were never accepted before the index was ranged.
    -#}
    with batch_event_ids as (
        select distinct event_id from ({{ batch_event_ids }}) as batch where event_id is not null
    ),

    units as (
        select id_unit, first_event_id, last_event_id
        from {{ directory }}
        where unit_base = {{ unit_base | int }}
    ),

    {#- kind 0 (a unit's start) sorts before kind 1 (a batch id) equal to it. #}
    bounds as (
        select first_event_id as event_id, 0 as kind, id_unit, last_event_id from units
        union all
        select event_id, 1 as kind, cast(null as bigint) as id_unit, cast(null as string) as last_event_id
        from batch_event_ids
    ),

    placed as (
        select
            event_id,
            kind,
            last(id_unit, true) over (
                order by event_id, kind rows between unbounded preceding and current row
            ) as id_unit,
            last(last_event_id, true) over (
                order by event_id, kind rows between unbounded preceding and current row
            ) as unit_last_event_id
        from bounds
    )

    select distinct id_unit
    from placed
    where kind = 1 and id_unit is not null and event_id <= unit_last_event_id
{%- endmacro %}
