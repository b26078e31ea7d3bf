"""The SMAC maps read from their .SC2Map files: the reader (``read_maps``) and the shipped data (``smac_maps.json``)."""
