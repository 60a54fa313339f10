from app import bad
