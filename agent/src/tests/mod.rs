mod against_kubefake;
mod decisions;
mod dockerfile;
