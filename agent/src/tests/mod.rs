mod against_kubefake;
mod decisions;
