mod decisions;
