-- Keep one day's pipeline statistics, replacing an earlier computation of the same day.
INSERT INTO pipeline_stats (stats_day, stats) VALUES (%s, %s)
ON CONFLICT (stats_day) DO UPDATE SET stats = EXCLUDED.stats, computed_at = now()
