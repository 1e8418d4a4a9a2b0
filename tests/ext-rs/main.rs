fn main() {
    println!("x")
}
