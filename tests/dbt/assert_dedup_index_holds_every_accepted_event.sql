{#-
    The dedup index (int_payment_event_ids) holds every accepted event once, with its ingest_seq and
    payload hash, and its directory (int_payment_event_id_units) places it: the indexed rows are read
    the way classification reads them (dedup_index_units_query, dedup_index_predicate), so an event
    the directory would not find is reported missing. Returns one row per failing event_id with
    `failure`: missing, indexed more than once, indexed with another ingest_seq or payload, (when
    every row is checked) indexed but not an accepted event; and one row per directory unit of the
    current base that starts inside another (the lookup needs disjoint ranges).
    Which rows: checked_since. A build that payledger runs checks the accepted events past the
    published build's events watermark, up to the index's own watermark (later ones are looked up
    in canonical history until the index has them); otherwise every row.
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
{%- set scope = changed_since_checked(since, ingest_seq='ingest_seq') ~ ' and ingest_seq <= ' ~ indexed_until %}
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
    group by accepted_events.event_id
),

failures as (
    select
        event_id,
        case
            when copies = 0 then 'missing'
            when copies > 1 then 'indexed more than once'
            else 'indexed with another ingest_seq or payload'
        end as failure
    from matched
    where copies != 1 or equal_copies != 1
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
    {#- The lookup places an id in the last unit that starts at or before it: the units of one
        base must be disjoint ranges. #}
    select
        later.first_event_id as event_id,
        'unit ' || later.id_unit || ' starts inside unit ' || earlier.id_unit as failure
    from {{ directory }} as earlier
    inner join {{ directory }} as later
        on earlier.unit_base = later.unit_base
        and earlier.id_unit != later.id_unit
        and later.first_event_id between earlier.first_event_id and earlier.last_event_id
    where earlier.unit_base = {{ unit_base }}
)

select * from failures
