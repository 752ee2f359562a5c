{#-
    The dedup index (int_payment_event_ids) holds every accepted event once, with its ingest_seq and
    payload hash, and its directory (int_payment_event_id_units) places it: the indexed rows are read
    the way classification reads them (dedup_index_units_query, dedup_index_predicate), so an event
    the directory would not find is reported missing. Returns one row per failing event_id with
    `failure`: missing, indexed more than once, indexed with another ingest_seq or payload, past
    the index's watermark yet its id indexed (an earlier copy was accepted: the index has the
    later events only once a build appends them), (when every row is checked) indexed but not an
    accepted event; and one row per directory unit of the current base that starts inside the
    unit before it in the order of first ids (the lookup needs disjoint ranges). So a new accepted
    event whose id an earlier accepted event holds is found here through the directory, without a
    scan of every event id (valid_rows on the classification checks that key among the new rows
    only).
    Which rows: checked_since. A build that payledger runs checks the accepted events past the
    published build's events watermark; otherwise every row.
-#}
{%- set since = checked_since() %}
{%- set index = ref('int_payment_event_ids') %}
{%- set directory = ref('int_payment_event_id_units') %}
{%- set indexed_until = 0 %}
{%- set unit_base = 0 %}
{%- set units = [] %}
{%- if execute and load_relation(index) is not none and load_relation(directory) is not none %}
    {#- Read now (the index and its directory may have been written by this invocation), in one
        statement of bare max() subqueries, which Delta answers from its log. #}
    {%- set found = run_query("select (select max(ingest_seq) from " ~ index ~ "), (select max(unit_base) from " ~ directory ~ ")").rows[0] %}
    {%- set indexed_until = found[0] or 0 %}
    {%- set unit_base = found[1] or 0 %}
{%- endif %}
{%- set scope = changed_since_checked(since, ingest_seq='ingest_seq') %}
{%- if execute and since is not none and unit_base %}
    {%- set units = run_query(dedup_index_units_query(
        directory,
        'select event_id from ' ~ ref('int_payment_events_classified') ~ ' where is_accepted and ' ~ scope,
        unit_base,
    )).columns[0].values() | list %}
{%- endif %}

with accepted_events as (
    select
        event_id,
        ingest_seq,
        {{ event_payload_hash() }} as payload_hash
    from {{ ref('int_payment_events_classified') }}
    where is_accepted and {{ scope }}
),

indexed_events as (
    select
        event_id,
        ingest_seq,
        payload_hash
    from {{ index }}
    where {{ dedup_index_predicate(unit_base, units) if since is not none else 'true' }}
),

matched as (
    select
        accepted_events.event_id,
        accepted_events.ingest_seq > {{ indexed_until }} as is_past_index,
        count(indexed_events.event_id) as copies,
        count(
            case
                when indexed_events.ingest_seq = accepted_events.ingest_seq
                    and indexed_events.payload_hash = accepted_events.payload_hash then 1
            end
        ) as equal_copies
    from accepted_events
    left join indexed_events
        on accepted_events.event_id = indexed_events.event_id
    group by accepted_events.event_id, accepted_events.ingest_seq
),

{# The lookup places an id in the last unit that starts at or before it: the units of one base
    must be disjoint ranges. In the order of their first ids, a unit that starts inside any earlier
    one starts inside the one just before it (one sort, not a join of every pair of units). #}
ordered_units as (
    select
        id_unit,
        first_event_id,
        lag(id_unit) over units_in_order as previous_id_unit,
        lag(last_event_id) over units_in_order as previous_last_event_id
    from {{ directory }}
    where unit_base = {{ unit_base }}
    window units_in_order as (partition by unit_base order by first_event_id, id_unit)
),

failures as (
    select
        event_id,
        case
            when is_past_index then 'past the index, yet its id is indexed'
            when copies = 0 then 'missing'
            when copies > 1 then 'indexed more than once'
            else 'indexed with another ingest_seq or payload'
        end as failure
    from matched
    where if(is_past_index, copies != 0, copies != 1 or equal_copies != 1)
    {%- if since is none %}
    union all
    select
        indexed_events.event_id,
        'indexed but not an accepted event' as failure
    from indexed_events
    left anti join accepted_events
        on indexed_events.event_id = accepted_events.event_id
    {%- endif %}
    union all
    select
        first_event_id as event_id,
        'unit ' || id_unit || ' starts inside unit ' || previous_id_unit as failure
    from ordered_units
    where first_event_id <= previous_last_event_id
)

select * from failures
