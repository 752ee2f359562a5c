{{
    config(
        materialized='incremental',
        incremental_strategy='append',
        on_schema_change='fail',
        partition_by=['id_unit'],
        tblproperties=log_checkpoint_tblproperties(clustered_write_tblproperties()),
    )
}}

{#-
    The dedup index: every accepted event's id, ingest_seq and payload hash, laid out so that a
    batch's lookup (int_payment_events_classified) reads the few files its ids fall in instead of
    all canonical history. A full build sorts the ids into units of dedup_index_unit_rows() ids,
    one file each (`id_unit`: the build's epoch second unit_base * 10^9, plus the range task *
    10^5, plus the unit within the task), and int_payment_event_id_units lists each unit's first
    and last id. An incremental build appends the newly accepted ids, unsorted, to `id_unit` -1,
    which every lookup reads whole; maintenance ranges the index again when that part has grown
    (payledger.maintain). Classification reads this table as it stood before the build (a
    back-edge, through node_relation), and the accepted rows past its watermark from canonical
    history itself, so a build that stopped between the two writes misses nothing.
-#}

{%- set watermark = incremental_watermark('ingest_seq') %}

with accepted_events as (
    select
        event_id,
        ingest_seq,
        {{ event_payload_hash() }} as payload_hash
    from {{ ref('int_payment_events_classified') }}
    where is_accepted{% if is_incremental() %} and ingest_seq > {{ watermark }}{% endif %}
),

{% if is_incremental() %}

final as (
    select
        cast(-1 as bigint) as id_unit,
        cast(null as bigint) as unit_base,
        event_id,
        ingest_seq,
        payload_hash
    from accepted_events
)

{% else %}

{#- The range tasks: about a million ids each (landed rows are an upper bound of accepted
    ones), and few enough units per task that the unit number stays below 10^5. #}
{%- set landed = run_watermarks().get('landed_ingest_seq', 0) | int %}
{%- set tasks = [1, (landed / 1000000) | round(0, 'ceil') | int, (landed / (dedup_index_unit_rows() * 50000)) | round(0, 'ceil') | int] | max %}
{#- Past every base the directory lists, so that its rows of an earlier sort never describe
    this one's units (two sorts in one second would otherwise share a base). #}
{%- set unit_base = [run_started_at.timestamp() | int, (run_watermarks().get('dedup_directory_unit_base') or 0) + 1] | max %}

ranged_events as (
    select /*+ repartition_by_range({{ tasks }}, event_id) */
        event_id,
        ingest_seq,
        payload_hash
    from accepted_events
    sort by event_id
),

{#- Within a task the rows come in event_id order: monotonically_increasing_id() is the task
    number times 2^33 plus the row's position in the task. #}
positioned as (
    select
        monotonically_increasing_id() as position,
        event_id,
        ingest_seq,
        payload_hash
    from ranged_events
),

final as (
    select
        cast({{ unit_base }} as bigint) * {{ _dedup_units_per_base() }}
            + shiftright(position, 33) * 100000
            + (position & 8589934591) div {{ dedup_index_unit_rows() }} as id_unit,
        cast({{ unit_base }} as bigint) as unit_base,
        event_id,
        ingest_seq,
        payload_hash
    from positioned
)

{% endif %}

select * from final
