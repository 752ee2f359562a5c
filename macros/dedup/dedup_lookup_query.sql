{% macro dedup_lookup_query(canonical, landed_event_ids=none) -%}
    {#-
        A query over every earlier accepted copy that classifying a batch may need to find
        (`event_id`, `ingest_seq`, `payload_hash`: event_payload_hash()), where it is cheapest to
        read. With the dedup index (int_payment_event_ids, read as it stood before this build: a
        back-edge): the index's partitions that dedup_index_predicate selects for the ids of
        `landed_event_ids` (a query with a column `event_id`; none: nothing landed, so no unit is
        looked up), and the accepted rows of `canonical` (the classification's own table) past the
        index's watermark, which a build that stopped before the index's write left out of it.
        Without the index (a warehouse built before it): every accepted row of `canonical`.
        The caller joins it with the batch's ids; it may hold rows of other ids.
    -#}
    {%- set index = load_relation(node_relation('int_payment_event_ids')) if execute else none -%}
    {%- set marks = run_watermarks() -%}
    {%- set look_up = index is not none and landed_event_ids is not none and marks.dedup_directory_unit_base -%}
    {%- set units = run_query(dedup_index_units_query(
        node_relation('int_payment_event_id_units'), landed_event_ids, marks.dedup_directory_unit_base
    )).columns[0].values() | list if look_up else [] -%}
    {%- if index is none %}
    select
        event_id,
        ingest_seq,
        {{ event_payload_hash() }} as payload_hash
    from {{ canonical }}
    where is_accepted
    {%- else %}
    select
        event_id,
        ingest_seq,
        payload_hash
    from {{ index }}
    where {{ dedup_index_predicate(marks.dedup_directory_unit_base, units) }}
    union all
    select
        event_id,
        ingest_seq,
        {{ event_payload_hash() }} as payload_hash
    from {{ canonical }}
    where is_accepted and ingest_seq > {{ marks.indexed_ingest_seq }}
    {%- endif -%}
{%- endmacro %}
