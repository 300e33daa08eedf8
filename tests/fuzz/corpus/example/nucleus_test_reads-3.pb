
FASTQ_with_trailing_spaceCGG"FAD