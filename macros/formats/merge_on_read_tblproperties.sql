{% macro merge_on_read_tblproperties(change_feed=false) -%}
    {#-
        Table properties that make a MERGE record deleted rows without rewriting data files
        (merge-on-read). For the config of incremental models whose MERGEs touch few rows of large
        files. With `change_feed`, also those that make the format record each commit's changed
        rows, where it has a change data feed that SQL reads (change_feed_relation).
    -#}
    {{- return(format_variant('merge_on_read_tblproperties')(change_feed)) -}}
{%- endmacro %}


{% macro delta__merge_on_read_tblproperties(change_feed=false) -%}
    {#- Deletion vectors; the change data feed: MERGE writes pre- and post-images of updated rows to
        _change_data. -#}
    {%- set properties = {'delta.enableDeletionVectors': 'true'} -%}
    {%- if change_feed -%}
        {%- do properties.update({'delta.enableChangeDataFeed': 'true'}) -%}
    {%- endif -%}
    {{- return(properties) -}}
{%- endmacro %}


{% macro iceberg__merge_on_read_tblproperties(change_feed=false) -%}
    {#- Format version 2, with position deletes for MERGE, UPDATE and DELETE. No change data feed:
        Iceberg's changelog is a procedure over snapshots, not a relation of one query. -#}
    {{- return({
        'format-version': '2',
        'write.merge.mode': 'merge-on-read',
        'write.update.mode': 'merge-on-read',
        'write.delete.mode': 'merge-on-read',
    }) -}}
{%- endmacro %}
