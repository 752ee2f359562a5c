{#-
    Overrides dbt-spark's snapshot staging (dbt-spark 1.11.0, whose macro the root project's of the
    same name replaces; tests/unit/test_upstream.py notices a change): the staged changes go into
    a temporary view of the session, on both formats, instead of a view in the metastore
    (schema-qualified on Delta, unqualified on Iceberg). dbt-spark's comment says the view must not
    be temporary so that `describe` reads its columns; Spark 3.5 describes a temporary view as
    well. The metastore's view was one write to make it and one to drop it after the MERGE:
    0.7-1.3 s of a changed snapshot from a new process (2026-12-07). post_snapshot drops the
    temporary view (`drop view if exists <name>`, which Spark resolves to the temporary view).
-#}
{% macro spark_build_snapshot_staging_table(strategy, sql, target_relation) %}
    {%- set tmp_relation = api.Relation.create(
        identifier=target_relation.identifier ~ '__dbt_tmp', schema=none, database=none, type='view'
    ) -%}
    {% call statement('build_snapshot_staging_relation') %}
        create or replace temporary view {{ tmp_relation }} as
        {{ snapshot_staging_table(strategy, sql, target_relation) }}
    {% endcall %}
    {{ return(tmp_relation) }}
{% endmacro %}
