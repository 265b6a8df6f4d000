-- One scoring of a memory's labelled questions.
INSERT INTO retrieval_quality (memory, profile, generation, questions, figures)
VALUES (%s, %s, %s, %s, %s) RETURNING measured_at
