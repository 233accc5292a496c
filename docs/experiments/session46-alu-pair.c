#include <stdio.h>
#include <stdlib.h>
#include <pthread.h>
#include <time.h>
#include <stdint.h>
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
static volatile uint64_t sink;
static void* work(void*a){ double*out=a; uint64_t x[8]={1,2,3,4,5,6,7,8}; double t0=now();
 for(long i=0;i<400000000;i++){ for(int k=0;k<8;k++){ x[k]^=x[k]<<13; x[k]^=x[k]>>7; x[k]^=x[k]<<17; } }
 *out=now()-t0; uint64_t s=0; for(int k=0;k<8;k++) s+=x[k]; sink=s; return 0;}
int main(int c,char**v){int n=atoi(v[1]);pthread_t t[2];double o[2];for(int i=0;i<n;i++)pthread_create(&t[i],0,work,&o[i]);for(int i=0;i<n;i++)pthread_join(t[i],0);for(int i=0;i<n;i++)printf("%.3f s ",o[i]);printf("\n");}
