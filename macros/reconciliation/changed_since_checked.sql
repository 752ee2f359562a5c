{% macro changed_since_checked(since, ingest_seq=none, written_at=none) -%}
    {#-
        A SQL predicate for the rows that came after the published build a build's checks start
        from (`since`, from checked_since()): `true` when since is none (every row); else the rows
        past its events watermark by an ingest position column (`ingest_seq`), or the rows written
        after its publication by a write-time column (`written_at`: a later build started after it,
        so each row it writes carries a later build_started_at()). Exactly one column is given.
    -#}
    {%- if (ingest_seq is none) == (written_at is none) -%}
        {{ exceptions.raise_compiler_error('changed_since_checked: give exactly one of ingest_seq and written_at') }}
    {%- endif -%}
    {%- if since is none -%}
        true
    {%- elif ingest_seq is not none -%}
        {{ ingest_seq }} > {{ since.events_watermark }}
    {%- else -%}
        {{ written_at }} > cast({{ quoted_literal(since.written_after) }} as timestamp)
    {%- endif -%}
{%- endmacro %}
